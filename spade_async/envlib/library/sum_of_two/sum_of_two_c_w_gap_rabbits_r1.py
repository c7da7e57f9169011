SKILL = "Pattern Recognition"
HINT = "Every term is the sum of the two before it: add the last two numbers."
DESCRIPTION = "Continue a sequence where each term adds up the two before it."


class RabbitPairs(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.seq = [self.rng.randint(1, 3), self.rng.randint(1, 3)]
        while len(self.seq) < 6:
            self.seq.append(self.seq[-1] + self.seq[-2])
        self.answer = self.seq[-1] + self.seq[-2]
        return f"Rabbit pairs, month by month: {', '.join(map(str, self.seq))}, ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.say("The rabbits agree!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It continues with {self.answer}.", 0.0, True)
        return self.say(f"{guess} is {abs(guess - self.answer)} away.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

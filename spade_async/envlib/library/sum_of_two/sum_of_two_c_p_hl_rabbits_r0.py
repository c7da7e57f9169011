SKILL = "Pattern Recognition"
HINT = "Every term is the sum of the two before it: add the last two numbers."
DESCRIPTION = "Continue a sequence where each term adds up the two before it."


class RabbitPairs(GameEnv):
    max_turns = 2

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
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.answer:
            return "The rabbits agree!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It continues with {self.answer}.", round(max(0.0, 0.9 - abs(guess - self.answer) / 20), 2), True, False, {}
        return f"No, go {'higher' if guess < self.answer else 'lower'}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

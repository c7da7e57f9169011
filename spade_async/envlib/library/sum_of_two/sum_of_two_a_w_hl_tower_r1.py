SKILL = "Pattern Recognition"
HINT = "Every term is the sum of the two before it: add the last two numbers."
DESCRIPTION = "Continue a sequence where each term adds up the two before it."


class BlockTower(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.seq = [self.rng.randint(1, 5), self.rng.randint(1, 5)]
        while len(self.seq) < 6:
            self.seq.append(self.seq[-1] + self.seq[-2])
        self.answer = self.seq[-1] + self.seq[-2]
        return f"Blocks in each tower level: {', '.join(map(str, self.seq))}, ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.say("Tower complete!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It continues with {self.answer}.", 0.0, True)
        return self.say(f"No, go {'higher' if guess < self.answer else 'lower'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Write down the differences between neighbours: they grow by the same amount each time."
DESCRIPTION = "Continue a sequence whose gaps grow steadily."


class GapGrowth(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        value, gap, self.grow = self.rng.randint(0, 9), self.rng.randint(1, 4), self.rng.randint(1, 3)
        self.seq = []
        for _ in range(5):
            self.seq.append(value)
            value, gap = value + gap, gap + self.grow
        self.answer = value
        return f"Numbers: {', '.join(map(str, self.seq))}, ... Answer the next number with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.answer:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The next number was {self.answer}.", 0.4 if abs(guess - self.answer) <= self.grow else 0.0, True, False, {}
        return f"That would be a gap of {guess - self.seq[-1]}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Find the common difference from two neighbours, then fill the gap so that all steps are equal."
DESCRIPTION = "Fill in the missing term of an evenly spaced sequence."


class TrainTimes(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        start, step = self.rng.randint(1, 20), self.rng.randint(2, 9)
        self.seq = [start + i * step for i in range(6)]
        self.gap = self.rng.randint(1, 4)
        shown = ", ".join("?" if i == self.gap else str(v) for i, v in enumerate(self.seq))
        return f"A train leaves at these minutes past the hour: {shown}. What is the missing number? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.seq[self.gap]:
            return "On schedule!", 1.0, True, False, {}
        before, after = guess - self.seq[self.gap - 1], self.seq[self.gap + 1] - guess
        if self.turn >= self.max_turns:
            return f"The gap held {self.seq[self.gap]}.", 0.3 if abs(before - after) <= 2 else 0.0, True, False, {}
        return f"With {guess} the steps would be {before} and {after}; they must match.", 0.0, False, False, {}

    def solution(self):
        return [str(self.seq[self.gap])]

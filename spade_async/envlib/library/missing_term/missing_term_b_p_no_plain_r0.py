SKILL = "Pattern Recognition"
HINT = "Find the common difference from two neighbours, then fill the gap so that all steps are equal."
DESCRIPTION = "Fill in the missing term of an evenly spaced sequence."


class GapFill(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        start, step = self.rng.randint(1, 20), self.rng.randint(2, 9)
        self.seq = [start + i * step for i in range(6)]
        self.gap = self.rng.randint(1, 4)
        shown = ", ".join("?" if i == self.gap else str(v) for i, v in enumerate(self.seq))
        return f"Fill the gap: {shown}. What is the missing number? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.seq[self.gap]:
            return "Correct!", 1.0, True, False, {}
        before, after = guess - self.seq[self.gap - 1], self.seq[self.gap + 1] - guess
        if self.turn >= self.max_turns:
            return f"The gap held {self.seq[self.gap]}.", 0.3 if abs(before - after) <= 2 else 0.0, True, False, {}
        return f"No: the steps around the gap would differ by {abs(before - after)}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.seq[self.gap])]

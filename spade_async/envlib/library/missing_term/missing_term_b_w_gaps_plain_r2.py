SKILL = "Pattern Recognition"
HINT = "Find the common difference from two neighbours, then fill the gap so that all steps are equal."
DESCRIPTION = "Fill in the missing term of an evenly spaced sequence."


class GapFill(GameEnv):
    max_turns = 3

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
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.seq[self.gap]:
            return self.finish("Correct!", 1.0)
        before, after = guess - self.seq[self.gap - 1], self.seq[self.gap + 1] - guess
        if self.turn >= self.max_turns:
            return self.finish(f"The gap held {self.seq[self.gap]}.", 0.0)
        return self.reply(f"With {guess} the steps would be {before} and {after}; they must match.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.seq[self.gap])]

SKILL = "Pattern Recognition"
HINT = "The numbers grow by the same amount each time; add that difference to the last number."
DESCRIPTION = "Continue an arithmetic sequence; wrong answers get higher/lower feedback."


class NextNumber(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        start, self.diff = self.rng.randint(1, 9), self.rng.randint(1, 5)
        self.terms = [start + i * self.diff for i in range(4)]
        self.answer = self.terms[-1] + self.diff
        shown = ", ".join(str(t) for t in self.terms)
        return f"What number comes next: {shown}, ? Answer with \\boxed{{number}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit():
            return "Answer with a number, like \\boxed{10}.", 0.0, False, self.turn >= self.max_turns, {}
        if int(text) == self.answer:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.answer}.", 0.0, True, False, {}
        hint = "higher" if int(text) < self.answer else "lower"
        return f"No. The next number is {hint} than {text}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

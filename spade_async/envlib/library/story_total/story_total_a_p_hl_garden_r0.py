SKILL = "Mathematical Reasoning"
HINT = "Add the new rows to the old rows first, then multiply by plants per row."
DESCRIPTION = "Compute a total from a short story; wrong totals get higher/lower feedback."


class GardenRows(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = (self.count + self.extra) * self.each
        return f"A garden has {self.count} rows and gets {self.extra} more; each row holds {self.each} plants. How many plants in all? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return "Send a whole number, like \\boxed{12}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(text)
        if guess == self.answer:
            return "The garden is full!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The total was {self.answer}.", round(max(0.0, 0.9 - abs(guess - self.answer) / 50), 2), True, False, {}
        word = "higher" if guess < self.answer else "lower"
        return f"No, the total is {word}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

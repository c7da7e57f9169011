SKILL = "Mathematical Reasoning"
HINT = "Add the new rows to the old rows first, then multiply by plants per row."
DESCRIPTION = "Compute a total from a short story; wrong totals get bigger/smaller feedback."


class GardenRows(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = (self.count + self.extra) * self.each
        return f"A garden has {self.count} rows and gets {self.extra} more; each row holds {self.each} plants. How many plants in all? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.say("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.say("The garden is full!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The total was {self.answer}.", 0.0, True)
        word = "bigger" if guess < self.answer else "smaller"
        return self.say(f"No, the total is {word}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

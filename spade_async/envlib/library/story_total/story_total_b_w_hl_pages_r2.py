SKILL = "Mathematical Reasoning"
HINT = "Pages per day times days, plus twice the weekend pages."
DESCRIPTION = "Compute a total from a short story; wrong totals get higher/lower feedback."


class ReadingPages(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = self.count * self.each + self.extra * 2
        return f"You read {self.each} pages a day for {self.count} days and {self.extra} pages on each of 2 weekend days. How many pages did you read? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.finish("Book finished!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The total was {self.answer}.", 0.0)
        word = "higher" if guess < self.answer else "lower"
        return self.reply(f"No, the total is {word}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Mathematical Reasoning"
HINT = "Pages per day times days, plus twice the weekend pages."
DESCRIPTION = "Compute a total from a short story; wrong totals get higher/lower feedback."


class ReadingPages(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = self.count * self.each + self.extra * 2
        return f"You read {self.each} pages a day for {self.count} days and {self.extra} pages on each of 2 weekend days. How many pages did you read? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.say("Book finished!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The total was {self.answer}.", round(max(0.0, 0.9 - abs(guess - self.answer) / 50), 2), True)
        word = "higher" if guess < self.answer else "lower"
        return self.say(f"No, the total is {word}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

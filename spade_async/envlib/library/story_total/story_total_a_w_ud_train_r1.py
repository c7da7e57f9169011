SKILL = "Mathematical Reasoning"
HINT = "Multiply wagons by seats per deck and by the 2 decks, then add the folding seats."
DESCRIPTION = "Compute a total from a short story; wrong totals get bigger/smaller feedback."


class TrainSeats(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = self.count * self.each * 2 + self.extra
        return f"A train has {self.count} wagons with {self.each} seats on each of 2 decks, plus {self.extra} folding seats. How many seats in all? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.say("Every seat counted.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The total was {self.answer}.", 0.0, True)
        word = "bigger" if guess < self.answer else "smaller"
        return self.say(f"No, the total is {word}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

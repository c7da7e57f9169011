SKILL = "Mathematical Reasoning"
HINT = "Divide, drop the whole groups and answer what is left: the remainder is always smaller than the group size."
DESCRIPTION = "Work out a remainder: riders filling rows of seats."


class BusSeats(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.total = self.rng.randint(15, 70)
        self.size = self.rng.randint(3, 9)
        self.left = self.total % self.size
        return f"{self.total} riders fill rows of {self.size} seats. How many sit in the last, partly filled row? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.left:
            return self.say("Correct, all aboard.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.left}.", 0.2, True)
        if guess >= self.size:
            return self.say(f"Too many: with {self.size} per group at most {self.size - 1} can be left.")
        return self.say(f"{guess} is not what remains. Try again.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.left)]

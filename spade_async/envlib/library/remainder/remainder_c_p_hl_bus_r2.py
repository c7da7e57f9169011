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
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.reply("That is not a number. Example: \\boxed{25}.")
        if guess == self.left:
            return self.finish("Correct, all aboard.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.left}.", 0.2)
        if guess >= self.size:
            return self.reply(f"Too many: with {self.size} per group at most {self.size - 1} can be left.")
        return self.reply(f"No, it is {'more' if guess < self.left else 'less'} than {guess}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.left)]

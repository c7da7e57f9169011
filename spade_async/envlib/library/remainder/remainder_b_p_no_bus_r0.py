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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.left:
            return "Correct, all aboard.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.left}.", 0.2, True, False, {}
        if guess >= self.size:
            return f"Too many: with {self.size} per group at most {self.size - 1} can be left.", 0.0, False, False, {}
        return f"{guess} is not what remains. Try again.", 0.0, False, False, {}

    def solution(self):
        return [str(self.left)]

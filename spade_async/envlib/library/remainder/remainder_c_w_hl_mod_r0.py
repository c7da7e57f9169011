SKILL = "Mathematical Reasoning"
HINT = "Divide, drop the whole groups and answer what is left: the remainder is always smaller than the group size."
DESCRIPTION = "Work out a remainder: a number modulo a small one."


class ModRemainder(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.total = self.rng.randint(50, 300)
        self.size = self.rng.randint(3, 9)
        self.left = self.total % self.size
        return f"What is {self.total} mod {self.size}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.left:
            return "Correct remainder.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.left}.", 0.0, True, False, {}
        if guess >= self.size:
            return f"Too many: with {self.size} per group at most {self.size - 1} can be left.", 0.0, False, False, {}
        return f"No, it is {'more' if guess < self.left else 'less'} than {guess}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.left)]

SKILL = "Mathematical Reasoning"
HINT = "Divide, drop the whole groups and answer what is left: the remainder is always smaller than the group size."
DESCRIPTION = "Work out a remainder: sweets shared equally among children."


class SweetShare(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.total = self.rng.randint(20, 80)
        self.size = self.rng.randint(3, 9)
        self.left = self.total % self.size
        return f"{self.total} sweets are shared equally by {self.size} children. How many are left over? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return "Send a whole number, like \\boxed{12}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(text)
        if guess == self.left:
            return "Right, those are left for you!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.left}.", 0.0, True, False, {}
        if guess >= self.size:
            return f"Too many: with {self.size} per group at most {self.size - 1} can be left.", 0.0, False, False, {}
        return f"{guess} is not what remains. Try again.", 0.0, False, False, {}

    def solution(self):
        return [str(self.left)]

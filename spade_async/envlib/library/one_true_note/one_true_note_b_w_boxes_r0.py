SKILL = "Logical Deduction"
HINT = "Exactly one note is true: for each box, suppose the prize is there and count the true notes; pick the one where the count is one."
DESCRIPTION = "Find the prize when exactly one of three notes tells the truth."

COLORS = ["red", "blue", "green", "white", "black", "gold"]


class ColorBoxes(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.options = self.rng.sample(COLORS, 3)
        while True:
            notes = [(self.rng.choice(["is", "is not"]), self.rng.choice(self.options)) for _ in range(3)]
            fits = [o for o in self.options if sum((o == x) == (w == "is") for w, x in notes) == 1]
            if len(fits) == 1:
                break
        self.prize = fits[0]
        said = " ".join(f"Note {i + 1}: the prize {w} in the {x} box." for i, (w, x) in enumerate(notes))
        return f"Three boxes: {', '.join(self.options)}. {said} Exactly one note is true. Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.prize:
            return "The prize is yours!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The prize was in the {self.prize} box.", 0.0, True, False, {}
        if choice in self.options:
            return f"The {choice} box is empty.", 0.0, False, False, {}
        return f"Choose one of: {', '.join(self.options)}.", 0.0, False, False, {}

    def solution(self):
        return [self.prize]

SKILL = "Logical Deduction"
HINT = "Exactly one note is true: for each cup, suppose the coin is there and count the true notes; pick the one where the count is one."
DESCRIPTION = "Find the coin when exactly one of three notes tells the truth."

CUPS = ["left", "middle", "right", "tall", "short", "wide"]


class CupTrick(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.options = self.rng.sample(CUPS, 3)
        while True:
            notes = [(self.rng.choice(["is", "is not"]), self.rng.choice(self.options)) for _ in range(3)]
            fits = [o for o in self.options if sum((o == x) == (w == "is") for w, x in notes) == 1]
            if len(fits) == 1:
                break
        self.coin = fits[0]
        said = " ".join(f"Note {i + 1}: the coin {w} in the {x} cup." for i, (w, x) in enumerate(notes))
        return f"A coin hides under one cup: {', '.join(self.options)}. {said} Exactly one note is true. Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.coin:
            return "There is the coin!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The coin was in the {self.coin} cup.", 0.1, True, False, {}
        if choice in self.options:
            return f"Nothing under the {choice} cup.", 0.0, False, False, {}
        return f"Choose one of: {', '.join(self.options)}.", 0.0, False, False, {}

    def solution(self):
        return [self.coin]

SKILL = "Logical Deduction"
HINT = "Exactly one note is true: for each cave, suppose the dragon is there and count the true notes; pick the one where the count is one."
DESCRIPTION = "Find the dragon when exactly one of three notes tells the truth."

CAVES = ["north", "south", "east", "west", "deep", "high"]


class DragonCave(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.options = self.rng.sample(CAVES, 3)
        while True:
            notes = [(self.rng.choice(["is", "is not"]), self.rng.choice(self.options)) for _ in range(3)]
            fits = [o for o in self.options if sum((o == x) == (w == "is") for w, x in notes) == 1]
            if len(fits) == 1:
                break
        self.dragon = fits[0]
        said = " ".join(f"Note {i + 1}: the dragon {w} in the {x} cave." for i, (w, x) in enumerate(notes))
        return f"A dragon sleeps in one of the caves: {', '.join(self.options)}. {said} Exactly one note is true. Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.dragon:
            return self.finish("You found the dragon's lair!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The dragon was in the {self.dragon} cave.", 0.0)
        if choice in self.options:
            return self.reply(f"Only bats in the {choice} cave.")
        return self.reply(f"Choose one of: {', '.join(self.options)}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.dragon]

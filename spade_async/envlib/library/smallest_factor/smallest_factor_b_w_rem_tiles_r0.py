SKILL = "Mathematical Reasoning"
HINT = "Test 2, 3, 5, 7 ... in order; the first one that divides the number evenly is the answer."
DESCRIPTION = "Find the smallest factor above 1 of a tile count."


class TileRows(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        p = self.rng.choice([2, 3, 5, 7, 11, 13])
        self.number = p * self.rng.randint(p, 21)
        self.least = next(d for d in range(2, self.number + 1) if self.number % d == 0)
        return f"A floor uses {self.number}. What is its smallest factor above 1? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.least:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.least}.", 0.0, True, False, {}
        if guess > 1 and self.number % guess == 0:
            return f"{guess} works but is not the smallest.", 0.0, False, False, {}
        return f"{self.number} / {guess} leaves {self.number % guess if guess else 'nothing'}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.least)]

SKILL = "Mathematical Reasoning"
HINT = "Test 2, 3, 5, 7 ... in order; the first one that divides the number evenly is the answer."
DESCRIPTION = "Find the smallest factor above 1 of a whole number."


class LeastFactor(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        p = self.rng.choice([2, 3, 5, 7, 11, 13])
        self.number = p * self.rng.randint(p, 25)
        self.least = next(d for d in range(2, self.number + 1) if self.number % d == 0)
        return f"The number is {self.number}. What is its smallest factor above 1? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.least:
            return "Yes, that is the smallest factor.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.least}.", 0.0, True, False, {}
        if guess > 1 and self.number % guess == 0:
            return f"{guess} divides {self.number}, but a smaller factor exists.", 0.0, False, False, {}
        return f"{guess} does not divide {self.number}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.least)]

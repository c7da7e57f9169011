SKILL = "Pattern Recognition"
HINT = "Each term is the previous one times the same factor; multiply the last term by it."
DESCRIPTION = "Continue a sequence that spreads by a constant factor."


class RumorSpread(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        first, self.factor = self.rng.randint(1, 5), self.rng.choice([2, 3])
        self.terms = [first * self.factor**i for i in range(4)]
        self.answer = self.terms[-1] * self.factor
        return f"People who heard the rumour, day by day: {', '.join(map(str, self.terms))}, ... What comes next? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.answer:
            return "Everyone heard it: right!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Next was {self.answer}.", 0.0, True, False, {}
        return f"{guess} would mean a factor of {guess / self.terms[-1]:.2f}; the factor is {self.factor if self.turn > 1 else 'constant'}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

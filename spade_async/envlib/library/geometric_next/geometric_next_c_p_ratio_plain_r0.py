SKILL = "Pattern Recognition"
HINT = "Each term is the previous one times the same factor; multiply the last term by it."
DESCRIPTION = "Continue a sequence that grows by a constant factor."


class TimesSequence(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        first, self.factor = self.rng.randint(1, 5), self.rng.choice([2, 3, 4])
        self.terms = [first * self.factor**i for i in range(4)]
        self.answer = self.terms[-1] * self.factor
        return f"Sequence: {', '.join(map(str, self.terms))}, ... What comes next? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.answer:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Next was {self.answer}.", 0.4 if guess % self.terms[-1] == 0 else 0.0, True, False, {}
        return f"{guess} would mean a factor of {guess / self.terms[-1]:.2f}; the factor is {self.factor if self.turn > 1 else 'constant'}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

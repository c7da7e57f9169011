SKILL = "Pattern Recognition"
HINT = "Each term is the previous one times the same factor; multiply the last term by it."
DESCRIPTION = "Continue a sequence that grows by a constant factor."


class TimesSequence(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        first, self.factor = self.rng.randint(1, 5), self.rng.choice([2, 3, 4])
        self.terms = [first * self.factor**i for i in range(4)]
        self.answer = self.terms[-1] * self.factor
        return f"Sequence: {', '.join(map(str, self.terms))}, ... What comes next? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return "Send a whole number, like \\boxed{12}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(text)
        if guess == self.answer:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Next was {self.answer}.", 0.0, True, False, {}
        return f"No, the next term is {'larger' if guess < self.answer else 'smaller'}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

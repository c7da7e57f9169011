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
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.reply("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.finish("Everyone heard it: right!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Next was {self.answer}.", 0.0)
        return self.reply(f"{guess} would mean a factor of {guess / self.terms[-1]:.2f}; the factor is {self.factor if self.turn > 1 else 'constant'}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Each term is the previous one times the same factor; multiply the last term by it."
DESCRIPTION = "Continue a sequence that doubles or triples by a constant factor."


class CellSplit(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        first, self.factor = self.rng.randint(1, 5), self.rng.choice([2, 3])
        self.terms = [first * self.factor**i for i in range(4)]
        self.answer = self.terms[-1] * self.factor
        return f"Cells divide every hour: {', '.join(map(str, self.terms))}, ... What comes next? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.finish("The culture matches!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Next was {self.answer}.", 0.0)
        return self.reply(f"No, the next term is {'larger' if guess < self.answer else 'smaller'}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Causal Inference"
HINT = "Find the factor that is on exactly in the mornings where the failed start happened; the others do not line up."
DESCRIPTION = "From a table of mornings, find which factor causes the failed start."

FACTORS = ["rain", "frost", "wind", "fog"]


class CarStart(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(FACTORS)
        while True:
            rows = [{f: self.rng.random() < 0.5 for f in FACTORS} for _ in range(5)]
            if sum(all(r[f] == r[self.cause] for r in rows) for f in FACTORS) == 1:
                break
        table = " ".join(f"Morning {i + 1}: {', '.join(f for f in FACTORS if r[f]) or 'nothing'} -> {'failed' if r[self.cause] else 'started'}." for i, r in enumerate(rows))
        return f"Your car fails to start some mornings. {table} Which factor causes the failed start? Answer with \\boxed{{factor}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.cause:
            return self.finish("Correct, that is the cause.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.cause}.", 0.0)
        return self.reply("No, that factor does not line up with the table.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.cause]

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
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.cause:
            return "Yes! Well deduced.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.cause}.", 0.0, True, False, {}
        return "Look for a row that breaks that idea.", 0.0, False, False, {}

    def solution(self):
        return [self.cause]

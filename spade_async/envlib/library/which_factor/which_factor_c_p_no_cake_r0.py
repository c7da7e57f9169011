SKILL = "Causal Inference"
HINT = "Find the factor that is on exactly in the bakes where the rising happened; the others do not line up."
DESCRIPTION = "From a table of bakes, find which factor causes the rising."

FACTORS = ["yeast", "sugar", "milk", "salt"]


class CakeRise(GameEnv):
    max_turns = 1

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(FACTORS)
        while True:
            rows = [{f: self.rng.random() < 0.5 for f in FACTORS} for _ in range(5)]
            if sum(all(r[f] == r[self.cause] for r in rows) for f in FACTORS) == 1:
                break
        table = " ".join(f"Bake {i + 1}: {', '.join(f for f in FACTORS if r[f]) or 'nothing'} -> {'rose' if r[self.cause] else 'flat'}." for i, r in enumerate(rows))
        return f"A baker kept notes. {table} Which factor causes the rising? Answer with \\boxed{{factor}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.cause:
            return "Correct, that is the cause.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.cause}.", 0.2 if choice in FACTORS else 0.0, True, False, {}
        return "No, that factor does not line up with the table.", 0.0, False, False, {}

    def solution(self):
        return [self.cause]

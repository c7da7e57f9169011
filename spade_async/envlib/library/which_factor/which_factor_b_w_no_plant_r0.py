SKILL = "Causal Inference"
HINT = "Find the factor that is on exactly in the pots where the flowering happened; the others do not line up."
DESCRIPTION = "From a table of pots, find which factor causes the flowering."

FACTORS = ["water", "light", "soil", "music"]


class PlantGrowth(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(FACTORS)
        while True:
            rows = [{f: self.rng.random() < 0.5 for f in FACTORS} for _ in range(5)]
            if sum(all(r[f] == r[self.cause] for r in rows) for f in FACTORS) == 1:
                break
        table = " ".join(f"Pot {i + 1}: {', '.join(f for f in FACTORS if r[f]) or 'nothing'} -> {'flowers' if r[self.cause] else 'no flowers'}." for i, r in enumerate(rows))
        return f"A gardener tried pots with different care. {table} Which factor causes the flowering? Answer with \\boxed{{factor}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.cause:
            return "Correct, that is the cause.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.cause}.", 0.0, True, False, {}
        return "No, that factor does not line up with the table.", 0.0, False, False, {}

    def solution(self):
        return [self.cause]

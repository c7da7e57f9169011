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
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.cause:
            return self.say("Correct, that is the cause.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.cause}.", 0.0, True)
        return self.say("No, that factor does not line up with the table.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.cause]

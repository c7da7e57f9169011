SKILL = "Logical Deduction"
HINT = "Chain the comparisons: whoever is never on the losing side of a 'heavier' clue is the answer."
DESCRIPTION = "Find the heaviest of four from pairwise comparisons."

NAMES = ["red", "blue", "green", "gray", "pink", "tan"]


class HeaviestBag(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.order = self.rng.sample(NAMES, 4)
        pairs = [(self.order[i], self.order[i + 1]) for i in range(3)]
        self.rng.shuffle(pairs)
        facts = " ".join(f"{a} is heavier than {b}." for a, b in pairs)
        return f"{facts} Who is the heaviest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.order[0].lower():
            return "Yes, nobody beats that one.", 1.0, True, False, {}
        rank = [n.lower() for n in self.order].index(choice) if choice in [n.lower() for n in self.order] else None
        if self.turn >= self.max_turns:
            return f"The heaviest is {self.order[0]}.", 0.0, True, False, {}
        if rank is None:
            return f"Name one of: {', '.join(sorted(self.order))}.", 0.0, False, False, {}
        return f"No, someone is heavier than {choice}.", 0.0, False, False, {}

    def solution(self):
        return [self.order[0]]

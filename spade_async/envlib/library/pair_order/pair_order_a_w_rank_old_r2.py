SKILL = "Logical Deduction"
HINT = "Chain the comparisons: whoever is never on the losing side of a 'older' clue is the answer."
DESCRIPTION = "Find the oldest of four from pairwise comparisons."

NAMES = ["oak", "elm", "ash", "pine", "birch", "yew"]


class OldestTree(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.order = self.rng.sample(NAMES, 4)
        pairs = [(self.order[i], self.order[i + 1]) for i in range(3)]
        self.rng.shuffle(pairs)
        facts = " ".join(f"{a} is older than {b}." for a, b in pairs)
        return f"{facts} Who is the oldest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.order[0].lower():
            return self.finish("Correct!", 1.0)
        rank = [n.lower() for n in self.order].index(choice) if choice in [n.lower() for n in self.order] else None
        if self.turn >= self.max_turns:
            return self.finish(f"The oldest is {self.order[0]}.", 0.0)
        if rank is None:
            return self.reply(f"Name one of: {', '.join(sorted(self.order))}.")
        return self.reply(f"No, {choice} is number {rank + 1} of 4.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.order[0]]

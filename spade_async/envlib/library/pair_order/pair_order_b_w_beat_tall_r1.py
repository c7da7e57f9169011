SKILL = "Logical Deduction"
HINT = "Chain the comparisons: whoever is never on the losing side of a 'taller' clue is the answer."
DESCRIPTION = "Find the tallest of four from pairwise comparisons."

NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn"]


class TallestKid(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.order = self.rng.sample(NAMES, 4)
        pairs = [(self.order[i], self.order[i + 1]) for i in range(3)]
        self.rng.shuffle(pairs)
        facts = " ".join(f"{a} is taller than {b}." for a, b in pairs)
        return f"{facts} Who is the tallest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.order[0].lower():
            return self.say("Yes, nobody beats that one.", 1.0, True)
        rank = [n.lower() for n in self.order].index(choice) if choice in [n.lower() for n in self.order] else None
        if self.turn >= self.max_turns:
            return self.say(f"The tallest is {self.order[0]}.", 0.0, True)
        if rank is None:
            return self.say(f"Name one of: {', '.join(sorted(self.order))}.")
        return self.say(f"No, someone is taller than {choice}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.order[0]]

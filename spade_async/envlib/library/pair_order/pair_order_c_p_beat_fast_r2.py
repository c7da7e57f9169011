SKILL = "Logical Deduction"
HINT = "Chain the comparisons: whoever is never on the losing side of a 'faster' clue is the answer."
DESCRIPTION = "Find the fastest of four from pairwise comparisons."

NAMES = ["Kai", "Lia", "Max", "Nia", "Oto", "Pia"]


class FastestRunner(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.order = self.rng.sample(NAMES, 4)
        pairs = [(self.order[i], self.order[i + 1]) for i in range(3)]
        self.rng.shuffle(pairs)
        facts = " ".join(f"{a} is faster than {b}." for a, b in pairs)
        return f"{facts} Who is the fastest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.order[0].lower():
            return self.finish("Yes, nobody beats that one.", 1.0)
        rank = [n.lower() for n in self.order].index(choice) if choice in [n.lower() for n in self.order] else None
        if self.turn >= self.max_turns:
            return self.finish(f"The fastest is {self.order[0]}.", round(0.9 - 0.3 * rank, 2) if rank else 0.0)
        if rank is None:
            return self.reply(f"Name one of: {', '.join(sorted(self.order))}.")
        return self.reply(f"No, someone is faster than {choice}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.order[0]]

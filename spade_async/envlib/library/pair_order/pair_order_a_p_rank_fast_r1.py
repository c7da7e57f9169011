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
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.order[0].lower():
            return self.say("Correct!", 1.0, True)
        rank = [n.lower() for n in self.order].index(choice) if choice in [n.lower() for n in self.order] else None
        if self.turn >= self.max_turns:
            return self.say(f"The fastest is {self.order[0]}.", round(0.9 - 0.3 * rank, 2) if rank else 0.0, True)
        if rank is None:
            return self.say(f"Name one of: {', '.join(sorted(self.order))}.")
        return self.say(f"No, {choice} is number {rank + 1} of 4.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.order[0]]

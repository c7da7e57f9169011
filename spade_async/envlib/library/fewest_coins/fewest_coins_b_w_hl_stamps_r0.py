SKILL = "Optimization"
HINT = "Greedy is not always best with these stamps: try each count of the largest stamp and fill the rest."
DESCRIPTION = "How few stamps make an exact amount?"


class StampPostage(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.values = [1, 5, 6, 9]
        self.amount = self.rng.randint(6, 30)
        best = [0] + [99] * self.amount
        for a in range(1, self.amount + 1):
            best[a] = min(best[a - v] + 1 for v in self.values if v <= a)
        self.answer = best[self.amount]
        return f"Postage must be exact. Stamps come in {', '.join(map(str, self.values))}. What is the fewest stamps that make exactly {self.amount}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.answer:
            return "Optimal!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It takes {self.answer}.", 0.0, True, False, {}
        return f"No, the fewest is {'more' if guess < self.answer else 'less'} than {guess}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Optimization"
HINT = "Check every pair of books: keep the pairs within the limit and pick the one closest to it."
DESCRIPTION = "Load two books as close to the limit as possible without going over."


class BagPack(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.load = dict(zip("ABCDE", self.rng.sample(range(3, 30), 5)))
        sums = {f"{a} {b}": self.load[a] + self.load[b] for a, b in itertools.combinations("ABCDE", 2)}
        self.limit = self.rng.choice(sorted(sums.values())) + self.rng.randint(0, 3)
        self.top = max(v for v in sums.values() if v <= self.limit)
        self.pick = next(k for k, v in sums.items() if v == self.top)
        listed = ", ".join(f"{k}={v}" for k, v in self.load.items())
        return f"Two books fit in your bag; their weights: {listed}. Limit: {self.limit}. Answer two letters, like \\boxed{{A C}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        picked = sorted(set(choice.upper().split()))
        if len(picked) != 2 or not all(p in self.load for p in picked):
            return self.reply("Name two different letters from A to E.")
        total = self.load[picked[0]] + self.load[picked[1]]
        if total == self.top:
            return self.finish("Perfectly packed!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Best was {self.pick} with {self.top}.", 0.0)
        return self.reply(f"{'Too heavy.' if total > self.limit else 'Fits, but not the best.'}")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.pick]

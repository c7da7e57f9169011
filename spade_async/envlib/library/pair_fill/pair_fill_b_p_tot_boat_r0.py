SKILL = "Optimization"
HINT = "Check every pair of crates: keep the pairs within the limit and pick the one closest to it."
DESCRIPTION = "Load two crates as close to the limit as possible without going over."


class BoatLoad(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.load = dict(zip("ABCDE", self.rng.sample(range(3, 30), 5)))
        sums = {f"{a} {b}": self.load[a] + self.load[b] for a, b in itertools.combinations("ABCDE", 2)}
        self.limit = self.rng.choice(sorted(sums.values())) + self.rng.randint(0, 3)
        self.top = max(v for v in sums.values() if v <= self.limit)
        self.pick = next(k for k, v in sums.items() if v == self.top)
        listed = ", ".join(f"{k}={v}" for k, v in self.load.items())
        return f"A boat carries two crates; their weights: {listed}. Limit: {self.limit}. Answer two letters, like \\boxed{{A C}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        picked = sorted(set(choice.upper().split()))
        if len(picked) != 2 or not all(p in self.load for p in picked):
            return "Name two different letters from A to E.", 0.0, False, self.turn >= self.max_turns, {}
        total = self.load[picked[0]] + self.load[picked[1]]
        if total == self.top:
            return "The boat sails full!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Best was {self.pick} with {self.top}.", round(0.9 * total / self.top, 2) if total <= self.top else 0.0, True, False, {}
        return f"Those make {total}; {'over the limit' if total > self.limit else 'you can get closer'}.", 0.0, False, False, {}

    def solution(self):
        return [self.pick]

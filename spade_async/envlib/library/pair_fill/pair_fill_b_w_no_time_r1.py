SKILL = "Optimization"
HINT = "Check every pair of songs: keep the pairs within the limit and pick the one closest to it."
DESCRIPTION = "Load two songs as close to the limit as possible without going over."


class ShowSlots(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.load = dict(zip("ABCDE", self.rng.sample(range(3, 30), 5)))
        sums = {f"{a} {b}": self.load[a] + self.load[b] for a, b in itertools.combinations("ABCDE", 2)}
        self.limit = self.rng.choice(sorted(sums.values())) + self.rng.randint(0, 3)
        self.top = max(v for v in sums.values() if v <= self.limit)
        self.pick = next(k for k, v in sums.items() if v == self.top)
        listed = ", ".join(f"{k}={v}" for k, v in self.load.items())
        return f"Play two songs within the slot; their lengths: {listed}. Limit: {self.limit}. Answer two letters, like \\boxed{{A C}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        picked = sorted(set(choice.upper().split()))
        if len(picked) != 2 or not all(p in self.load for p in picked):
            return self.say("Name two different letters from A to E.")
        total = self.load[picked[0]] + self.load[picked[1]]
        if total == self.top:
            return self.say("The slot is filled just right!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Best was {self.pick} with {self.top}.", 0.0, True)
        return self.say(f"{'Too heavy.' if total > self.limit else 'Fits, but not the best.'}")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.pick]

SKILL = "Optimization"
HINT = "Divide each seeds by its price and pick the pack with the largest result."
DESCRIPTION = "Pick the pack that gives the most seeds per coin."

ITEMS = ["tomato", "bean", "pea", "corn", "carrot", "leek"]


class SeedPacks(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            self.offer = {n: (self.rng.randint(2, 9), self.rng.randint(5, 40)) for n in self.rng.sample(ITEMS, 4)}
            ranked = sorted(self.offer, key=lambda n: self.offer[n][1] / self.offer[n][0], reverse=True)
            if self.offer[ranked[0]][1] * self.offer[ranked[1]][0] != self.offer[ranked[1]][1] * self.offer[ranked[0]][0]:
                break
        self.best = ranked[0]
        listing = "; ".join(f"{n}: {p} coins for {v} seeds" for n, (p, v) in self.offer.items())
        return f"Seed packs for your garden: {listing}. Which gives the most seeds per coin? Answer with \\boxed{{pack}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.best:
            return self.say("Most seeds per coin!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The best deal was {self.best}.", 0.4 if choice in self.offer else 0.0, True)
        if choice in self.offer:
            return self.say(f"{choice} gives {self.offer[choice][1] / self.offer[choice][0]:.1f} per coin; another gives more.")
        return self.say(f"Pick one of: {', '.join(self.offer)}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.best]

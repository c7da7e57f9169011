SKILL = "Optimization"
HINT = "Divide each km by its price and pick the station with the largest result."
DESCRIPTION = "Pick the station that gives the most km per coin."

ITEMS = ["north", "south", "harbor", "airport", "central"]


class FuelStation(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            self.offer = {n: (self.rng.randint(2, 9), self.rng.randint(5, 40)) for n in self.rng.sample(ITEMS, 4)}
            ranked = sorted(self.offer, key=lambda n: self.offer[n][1] / self.offer[n][0], reverse=True)
            if self.offer[ranked[0]][1] * self.offer[ranked[1]][0] != self.offer[ranked[1]][1] * self.offer[ranked[0]][0]:
                break
        self.best = ranked[0]
        listing = "; ".join(f"{n}: {p} coins for {v} km" for n, (p, v) in self.offer.items())
        return f"Fuel buys different ranges at each station: {listing}. Which gives the most km per coin? Answer with \\boxed{{station}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.best:
            return "Cheapest kilometres!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The best deal was {self.best}.", 0.0, True, False, {}
        if choice in self.offer:
            return "Not the best value. Compare again.", 0.0, False, False, {}
        return f"Pick one of: {', '.join(self.offer)}.", 0.0, False, False, {}

    def solution(self):
        return [self.best]

SKILL = "Optimization"
HINT = "Drop every trip that costs more than the budget, then take the one with the highest fun."
DESCRIPTION = "Choose the trip with the highest fun that the budget allows."

NAMES = ["alpha", "bravo", "delta", "echo", "kilo", "zulu"]


class TripChoice(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        names = self.rng.sample(NAMES, 5)
        scores = self.rng.sample(range(10, 99), 5)
        self.cost = {n: self.rng.randint(5, 50) for n in names}
        self.score = dict(zip(names, scores))
        self.budget = sorted(self.cost.values())[2]
        self.best = max((n for n in names if self.cost[n] <= self.budget), key=self.score.get)
        rows = ", ".join(f"{n} ({self.cost[n]} coins, fun {self.score[n]})" for n in names)
        return f"Pick one holiday trip. Budget: {self.budget} coins. {rows}. Answer with \\boxed{{trip}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.best:
            return self.say("What a trip!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Best choice: {self.best}.", round(0.9 * self.score.get(choice, 0) / self.score[self.best], 2) if self.cost.get(choice, 99) <= self.budget else 0.0, True)
        if choice in self.cost and self.cost[choice] > self.budget:
            return self.say("Too expensive for the budget.")
        if choice in self.cost:
            return self.say("Affordable, but another option scores higher.")
        return self.say("Name one of the listed trips.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.best]

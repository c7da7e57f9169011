SKILL = "Optimization"
HINT = "Drop every worker that costs more than the budget, then take the one with the highest skill."
DESCRIPTION = "Choose the worker with the highest skill that the budget allows."

NAMES = ["alpha", "bravo", "delta", "echo", "kilo", "zulu"]


class HireWorker(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        names = self.rng.sample(NAMES, 5)
        scores = self.rng.sample(range(10, 99), 5)
        self.cost = {n: self.rng.randint(5, 50) for n in names}
        self.score = dict(zip(names, scores))
        self.budget = sorted(self.cost.values())[2]
        self.best = max((n for n in names if self.cost[n] <= self.budget), key=self.score.get)
        rows = ", ".join(f"{n} ({self.cost[n]} coins, skill {self.score[n]})" for n in names)
        return f"You can hire one worker. Budget: {self.budget} coins. {rows}. Answer with \\boxed{{worker}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.best:
            return "Great hire!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Best choice: {self.best}.", round(0.9 * self.score.get(choice, 0) / self.score[self.best], 2) if self.cost.get(choice, 99) <= self.budget else 0.0, True, False, {}
        if choice in self.cost and self.cost[choice] > self.budget:
            return "Too expensive for the budget.", 0.0, False, False, {}
        if choice in self.cost:
            return "{choice} scores {self.score[choice]}; you can do better.", 0.0, False, False, {}
        return "Name one of the listed workers.", 0.0, False, False, {}

    def solution(self):
        return [self.best]

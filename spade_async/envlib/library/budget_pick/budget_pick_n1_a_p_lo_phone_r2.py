SKILL = "Optimization"
HINT = "Drop every phone that costs more than the budget, then take the one with the highest rating."
DESCRIPTION = "Choose the phone with the highest rating that the budget allows."

NAMES = ["ava", "ben", "cal", "dee", "eli", "fay"]


class PhoneShop(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        names = self.rng.sample(NAMES, 5)
        scores = self.rng.sample(range(10, 99), 5)
        self.cost = {n: self.rng.randint(5, 50) for n in names}
        self.score = dict(zip(names, scores))
        self.budget = sorted(self.cost.values())[2]
        self.best = max((n for n in names if self.cost[n] <= self.budget), key=self.score.get)
        rows = ", ".join(f"{n} ({self.cost[n]} coins, rating {self.score[n]})" for n in names)
        return f"Phones on sale. Budget: {self.budget} coins. {rows}. Answer with \\boxed{{phone}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.best:
            return self.finish("Good purchase!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Best choice: {self.best}.", round(0.9 * self.score.get(choice, 0) / self.score[self.best], 2) if self.cost.get(choice, 99) <= self.budget else 0.0)
        if choice in self.cost and self.cost[choice] > self.budget:
            return self.reply("Too expensive for the budget.")
        if choice in self.cost:
            return self.reply("Affordable, but another option scores higher.")
        return self.reply("Name one of the listed phones.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.best]

SKILL = "Optimization"
HINT = "Compare the prices and buy the item with the smallest one."
DESCRIPTION = "Buy the cheapest of three items."

ITEMS = ["apple", "bread", "milk", "cheese", "rice", "tea", "soap", "eggs"]


class Cheapest(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        names = self.rng.sample(ITEMS, 3)
        prices = self.rng.sample(range(1, 10), 3)
        self.prices = dict(zip(names, prices))
        self.best = min(self.prices, key=self.prices.get)
        listing = ", ".join(f"{n} costs {p}" for n, p in self.prices.items())
        return f"{listing}. Buy the cheapest item with \\boxed{{item}}.", {}

    def step(self, action):
        self.turn += 1
        item = (self.parse_action(action) or "").strip().lower()
        if item == self.best:
            return "Best price!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The cheapest was {self.best}.", 0.0, True, False, {}
        if item in self.prices:
            return f"{item} costs {self.prices[item]}; something is cheaper.", 0.0, False, False, {}
        return f"Choose one of: {', '.join(self.prices)}.", 0.0, False, False, {}

    def solution(self):
        return [self.best]

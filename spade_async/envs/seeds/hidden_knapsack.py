SKILL = "Optimization"
HINT = (
    "Inspect all six items first: six turns, leaving two. Then list the subsets whose total weight "
    "fits the capacity and take the one with the largest total value; greedy by value per weight "
    "is a good start but check swaps of one item."
)
DESCRIPTION = "Pack a knapsack for maximum value when item values are hidden until inspected."


class HiddenKnapsack(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.weights = [self.rng.randint(1, 6) for _ in range(6)]
        self.values = [self.rng.randint(1, 9) for _ in range(6)]
        self.capacity = sum(self.weights) // 2
        subsets = [s for n in range(7) for s in itertools.combinations(range(6), n)]
        fits = [s for s in subsets if sum(self.weights[i] for i in s) <= self.capacity]
        self.best = max(fits, key=lambda s: sum(self.values[i] for i in s))
        return (
            f"Six items have weights {self.weights} (items 1-6); the knapsack holds weight "
            f"{self.capacity}. Values are hidden. Commands: \\boxed{{inspect I}} reveals item I's "
            "value; \\boxed{take I J ...} packs those items and ends the game. "
            f"You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().replace(",", " ").split())
        m = re.fullmatch(r"inspect ([1-6])", cmd)
        if m:
            return self._wait(f"Item {m.group(1)} has value {self.values[int(m.group(1)) - 1]}.")
        if not re.fullmatch(r"take( [1-6])+", cmd):
            return self._wait("Invalid action. Use \\boxed{inspect I} or \\boxed{take I J ...} with items 1-6.")
        items = {int(i) - 1 for i in cmd.split()[1:]}
        best = sum(self.values[i] for i in self.best)
        if sum(self.weights[i] for i in items) > self.capacity:
            return f"Too heavy: the knapsack broke. The best value was {best}.", 0.0, True, False, {}
        value = sum(self.values[i] for i in items)
        if value == best:
            return f"Optimal packing, value {value}!", 1.0, True, False, {}
        return f"Packed value {value}; the best was {best}.", 0.5 * value / best, True, False, {}

    def solution(self):
        return ["take " + " ".join(str(i + 1) for i in self.best)]

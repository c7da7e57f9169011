SKILL = "Optimization"
HINT = "Add up the legs of every route and take the route with the smallest total."
DESCRIPTION = "Choose the shortest of three network paths, each made of several legs."

ROUTES = ["alpha", "beta", "gamma", "delta", "omega"]


class PacketPath(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            self.legs = {r: [self.rng.randint(2, 15) for _ in range(self.rng.randint(2, 4))] for r in self.rng.sample(ROUTES, 3)}
            totals = sorted(sum(v) for v in self.legs.values())
            if totals[0] < totals[1]:
                break
        self.best = min(self.legs, key=lambda r: sum(self.legs[r]))
        text = " ".join(f"The {r} path: {' + '.join(map(str, v))} ms." for r, v in self.legs.items())
        return f"A packet can take one of three paths. {text} Which is shortest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.best:
            return "Lowest latency!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The {self.best} path was shortest.", round(0.9 * sum(self.legs[self.best]) / sum(self.legs[choice]), 2) if choice in self.legs else 0.0, True, False, {}
        if choice in self.legs:
            return f"That one totals {sum(self.legs[choice])}; a shorter one exists.", 0.0, False, False, {}
        return f"Choose from: {', '.join(self.legs)}.", 0.0, False, False, {}

    def solution(self):
        return [self.best]

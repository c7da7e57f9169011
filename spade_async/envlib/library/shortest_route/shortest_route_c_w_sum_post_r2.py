SKILL = "Optimization"
HINT = "Add up the legs of every route and take the route with the smallest total."
DESCRIPTION = "Choose the shortest of three delivery rounds, each made of several legs."

ROUTES = ["red", "blue", "green", "yellow", "gray"]


class PostRound(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            self.legs = {r: [self.rng.randint(2, 15) for _ in range(self.rng.randint(2, 4))] for r in self.rng.sample(ROUTES, 3)}
            totals = sorted(sum(v) for v in self.legs.values())
            if totals[0] < totals[1]:
                break
        self.best = min(self.legs, key=lambda r: sum(self.legs[r]))
        text = " ".join(f"The {r} round: {' + '.join(map(str, v))} blocks." for r, v in self.legs.items())
        return f"The postman can take one of three rounds. {text} Which is shortest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.best:
            return self.finish("Letters delivered early!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The {self.best} round was shortest.", 0.0)
        if choice in self.legs:
            return self.reply(f"That one totals {sum(self.legs[choice])}; a shorter one exists.")
        return self.reply(f"Choose from: {', '.join(self.legs)}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.best]

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
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.best:
            return self.say("Letters delivered early!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The {self.best} round was shortest.", round(0.9 * sum(self.legs[self.best]) / sum(self.legs[choice]), 2) if choice in self.legs else 0.0, True)
        if choice in self.legs:
            return self.say(f"That one totals {sum(self.legs[choice])}; a shorter one exists.")
        return self.say(f"Choose from: {', '.join(self.legs)}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.best]

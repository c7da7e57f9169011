SKILL = "Causal Inference"
HINT = "The fish weight rises by the same amount per step of the feeder: try two settings, work out the rule, and solve for the target."
DESCRIPTION = "Set a feeder so that its hidden linear effect gives the target fish weight."


class FishFeed(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.rate, self.base = self.rng.randint(2, 5), self.rng.randint(0, 9)
        self.best = self.rng.randint(1, 9)
        self.target = self.rate * self.best + self.base
        return f"A feeder setting decides how fast fish grow. Target fish weight: {self.target}. Try a setting from 0 to 12 with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        made = self.rate * guess + self.base
        if guess == self.best:
            return "Exactly on target!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Setting {self.best} was right.", round(max(0.0, 0.9 - abs(made - self.target) / 20), 2), True, False, {}
        return f"Setting {guess} gives {made}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.best)]

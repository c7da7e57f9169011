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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        made = self.rate * guess + self.base
        if guess == self.best:
            return "Perfect setting!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Setting {self.best} was right.", 0.0, True, False, {}
        return f"That gives {made}, {'below' if made < self.target else 'above'} the target.", 0.0, False, False, {}

    def solution(self):
        return [str(self.best)]

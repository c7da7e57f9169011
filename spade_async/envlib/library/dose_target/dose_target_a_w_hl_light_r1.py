SKILL = "Causal Inference"
HINT = "The brightness rises by the same amount per step of the dimmer: try two settings, work out the rule, and solve for the target."
DESCRIPTION = "Set a dimmer so that its hidden linear effect gives the target brightness."


class DimmerLight(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.rate, self.base = self.rng.randint(2, 5), self.rng.randint(0, 9)
        self.best = self.rng.randint(1, 9)
        self.target = self.rate * self.best + self.base
        return f"A dimmer controls a lamp. Target brightness: {self.target}. Try a setting from 0 to 12 with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        made = self.rate * guess + self.base
        if guess == self.best:
            return self.say("Perfect setting!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Setting {self.best} was right.", 0.0, True)
        return self.say(f"That gives {made}, {'below' if made < self.target else 'above'} the target.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.best)]

SKILL = "Causal Inference"
HINT = "The temperature rises by the same amount per step of the dial: try two settings, work out the rule, and solve for the target."
DESCRIPTION = "Set a dial so that its hidden linear effect gives the target temperature."


class HeaterDial(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.rate, self.base = self.rng.randint(2, 5), self.rng.randint(0, 9)
        self.best = self.rng.randint(1, 9)
        self.target = self.rate * self.best + self.base
        return f"A heater dial controls the room. Target temperature: {self.target}. Try a setting from 0 to 12 with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        made = self.rate * guess + self.base
        if guess == self.best:
            return self.say("Perfect setting!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Setting {self.best} was right.", round(max(0.0, 0.9 - abs(made - self.target) / 20), 2), True)
        return self.say(f"That gives {made}, {'below' if made < self.target else 'above'} the target.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.best)]

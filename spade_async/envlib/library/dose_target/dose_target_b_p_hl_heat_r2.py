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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        made = self.rate * guess + self.base
        if guess == self.best:
            return self.finish("Perfect setting!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Setting {self.best} was right.", round(max(0.0, 0.9 - abs(made - self.target) / 20), 2))
        return self.reply(f"That gives {made}, {'below' if made < self.target else 'above'} the target.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.best)]

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
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        made = self.rate * guess + self.base
        if guess == self.best:
            return self.finish("Exactly on target!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Setting {self.best} was right.", round(max(0.0, 0.9 - abs(made - self.target) / 20), 2))
        return self.reply(f"Setting {guess} gives {made}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.best)]

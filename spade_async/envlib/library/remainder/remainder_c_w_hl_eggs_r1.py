SKILL = "Mathematical Reasoning"
HINT = "Divide, drop the whole groups and answer what is left: the remainder is always smaller than the group size."
DESCRIPTION = "Work out a remainder: eggs packed into full boxes."


class EggBoxes(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.total = self.rng.randint(30, 120)
        self.size = self.rng.randint(3, 9)
        self.left = self.total % self.size
        return f"{self.total} eggs go into boxes of {self.size}. How many eggs do not fill a box? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.left:
            return self.say("All eggs counted.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.left}.", 0.0, True)
        if guess >= self.size:
            return self.say(f"Too many: with {self.size} per group at most {self.size - 1} can be left.")
        return self.say(f"No, it is {'more' if guess < self.left else 'less'} than {guess}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.left)]

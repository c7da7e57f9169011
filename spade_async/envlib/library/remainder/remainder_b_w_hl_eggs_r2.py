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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.left:
            return self.finish("All eggs counted.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.left}.", 0.0)
        if guess >= self.size:
            return self.reply(f"Too many: with {self.size} per group at most {self.size - 1} can be left.")
        return self.reply(f"No, it is {'more' if guess < self.left else 'less'} than {guess}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.left)]

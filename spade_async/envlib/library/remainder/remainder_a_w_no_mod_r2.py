SKILL = "Mathematical Reasoning"
HINT = "Divide, drop the whole groups and answer what is left: the remainder is always smaller than the group size."
DESCRIPTION = "Work out a remainder: a number modulo a small one."


class ModRemainder(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.total = self.rng.randint(50, 300)
        self.size = self.rng.randint(3, 9)
        self.left = self.total % self.size
        return f"What is {self.total} mod {self.size}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.left:
            return self.finish("Correct remainder.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.left}.", 0.0)
        if guess >= self.size:
            return self.reply(f"Too many: with {self.size} per group at most {self.size - 1} can be left.")
        return self.reply(f"{guess} is not what remains. Try again.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.left)]

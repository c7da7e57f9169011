SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the higher/lower reply."
DESCRIPTION = "Find the hidden depth of the well between 1 and 40; each wrong guess is answered with higher or lower."


class WellDepth(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.depth = self.rng.randint(1, 40)
        return f"How many metres deep is the well? It is a number from 1 to 40. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.depth:
            return self.finish("Splash! Exactly right.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Out of tries. It was {self.depth}.", 0.0)
        word = "higher" if guess < self.depth else "lower"
        return self.reply(f"{guess} is wrong. Go {word}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.depth)]

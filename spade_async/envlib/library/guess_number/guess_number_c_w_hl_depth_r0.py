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
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return "That is not a number. Example: \\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}
        if guess == self.depth:
            return "Splash! Exactly right.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Out of tries. It was {self.depth}.", 0.0, True, False, {}
        word = "higher" if guess < self.depth else "lower"
        return f"{guess} is wrong. Go {word}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.depth)]

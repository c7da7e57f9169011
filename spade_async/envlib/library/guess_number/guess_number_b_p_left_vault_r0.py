SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the more/less reply."
DESCRIPTION = "Find the hidden vault code between 1 and 60; each wrong guess is answered with more or less."


class VaultCode(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.code = self.rng.randint(1, 60)
        return f"A vault opens for one code. It is a number from 1 to 60. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.code:
            return "The vault swings open!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Out of tries. It was {self.code}.", round(max(0.0, 0.9 - abs(guess - self.code) / 20), 2), True, False, {}
        word = "more" if guess < self.code else "less"
        return f"Not {guess}: the answer is {word}. Tries left: {self.max_turns - self.turn}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.code)]

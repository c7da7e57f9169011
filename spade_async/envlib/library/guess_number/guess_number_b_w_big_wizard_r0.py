SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the too small/too big reply."
DESCRIPTION = "Find the hidden age of the wizard between 1 and 99; each wrong guess is answered with too small or too big."


class WizardAge(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.age = self.rng.randint(1, 99)
        return f"The wizard asks you to guess his age. It is a number from 1 to 99. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.age:
            return "The wizard bows: correct.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Out of tries. It was {self.age}.", 0.0, True, False, {}
        word = "too small" if guess < self.age else "too big"
        return f"Your guess {guess} is {word}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.age)]

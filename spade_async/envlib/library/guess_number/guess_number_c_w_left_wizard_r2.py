SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the more/less reply."
DESCRIPTION = "Find the hidden age of the wizard between 1 and 99; each wrong guess is answered with more or less."


class WizardAge(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.age = self.rng.randint(1, 99)
        return f"The wizard asks you to guess his age. It is a number from 1 to 99. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.reply("That is not a number. Example: \\boxed{25}.")
        if guess == self.age:
            return self.finish("The wizard bows: correct.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Out of tries. It was {self.age}.", 0.0)
        word = "more" if guess < self.age else "less"
        return self.reply(f"Not {guess}: the answer is {word}. Tries left: {self.max_turns - self.turn}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.age)]

SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the higher/lower reply."
DESCRIPTION = "Find the hidden age of the wizard between 1 and 99; each wrong guess is answered with higher or lower."


class WizardAge(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.age = self.rng.randint(1, 99)
        return f"The wizard asks you to guess his age. It is a number from 1 to 99. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.age:
            return self.say("The wizard bows: correct.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Out of tries. It was {self.age}.", 0.0, True)
        word = "higher" if guess < self.age else "lower"
        return self.say(f"{guess} is wrong. Go {word}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.age)]

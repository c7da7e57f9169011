SKILL = "Pattern Recognition"
HINT = "Each term is the previous one times the same factor; multiply the last term by it."
DESCRIPTION = "Continue a sequence that grows by a constant factor."


class TimesSequence(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        first, self.factor = self.rng.randint(1, 5), self.rng.choice([2, 3, 4])
        self.terms = [first * self.factor**i for i in range(4)]
        self.answer = self.terms[-1] * self.factor
        return f"Sequence: {', '.join(map(str, self.terms))}, ... What comes next? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.say("Correct!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Next was {self.answer}.", 0.0, True)
        return self.say(f"No, the next term is {'larger' if guess < self.answer else 'smaller'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

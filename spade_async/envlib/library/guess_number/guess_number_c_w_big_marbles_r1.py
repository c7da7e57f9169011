SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the too small/too big reply."
DESCRIPTION = "Find the hidden count of marbles between 1 and 50; each wrong guess is answered with too small or too big."


class MarbleJar(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(1, 50)
        return f"Guess how many marbles are in the jar. It is a number from 1 to 50. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.count:
            return self.say("You win the jar!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Out of tries. It was {self.count}.", 0.0, True)
        word = "too small" if guess < self.count else "too big"
        return self.say(f"Your guess {guess} is {word}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.count)]

SKILL = "Mathematical Reasoning"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the more/less reply."
DESCRIPTION = "Find the hidden count of marbles between 1 and 50; each wrong guess is answered with more or less."


class MarbleJar(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(1, 50)
        return f"Guess how many marbles are in the jar. It is a number from 1 to 50. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.count:
            return self.finish("You win the jar!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Out of tries. It was {self.count}.", round(max(0.0, 0.9 - abs(guess - self.count) / 20), 2))
        word = "more" if guess < self.count else "less"
        return self.reply(f"Not {guess}: the answer is {word}. Tries left: {self.max_turns - self.turn}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.count)]

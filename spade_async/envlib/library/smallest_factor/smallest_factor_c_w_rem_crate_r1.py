SKILL = "Mathematical Reasoning"
HINT = "Test 2, 3, 5, 7 ... in order; the first one that divides the number evenly is the answer."
DESCRIPTION = "Find the smallest factor above 1 of a number of apples."


class CrateSplit(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        p = self.rng.choice([2, 3, 5, 7, 11, 13])
        self.number = p * self.rng.randint(p, 19)
        self.least = next(d for d in range(2, self.number + 1) if self.number % d == 0)
        return f"A crate holds {self.number}. What is its smallest factor above 1? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.least:
            return self.say("Correct!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.least}.", 0.0, True)
        if guess > 1 and self.number % guess == 0:
            return self.say(f"{guess} works but is not the smallest.")
        return self.say(f"{self.number} / {guess} leaves {self.number % guess if guess else 'nothing'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.least)]

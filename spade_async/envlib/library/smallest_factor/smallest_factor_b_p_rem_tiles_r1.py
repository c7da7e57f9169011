SKILL = "Mathematical Reasoning"
HINT = "Test 2, 3, 5, 7 ... in order; the first one that divides the number evenly is the answer."
DESCRIPTION = "Find the smallest factor above 1 of a tile count."


class TileRows(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        p = self.rng.choice([2, 3, 5, 7, 11, 13])
        self.number = p * self.rng.randint(p, 21)
        self.least = next(d for d in range(2, self.number + 1) if self.number % d == 0)
        return f"A floor uses {self.number}. What is its smallest factor above 1? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.say("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.least:
            return self.say("Correct!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.least}.", 0.3 if guess > 1 and self.number % guess == 0 else 0.0, True)
        if guess > 1 and self.number % guess == 0:
            return self.say(f"{guess} works but is not the smallest.")
        return self.say(f"{self.number} / {guess} leaves {self.number % guess if guess else 'nothing'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.least)]

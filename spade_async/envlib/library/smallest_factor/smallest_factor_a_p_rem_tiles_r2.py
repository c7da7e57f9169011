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
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.least:
            return self.finish("Correct!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.least}.", 0.3 if guess > 1 and self.number % guess == 0 else 0.0)
        if guess > 1 and self.number % guess == 0:
            return self.reply(f"{guess} works but is not the smallest.")
        return self.reply(f"{self.number} / {guess} leaves {self.number % guess if guess else 'nothing'}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.least)]

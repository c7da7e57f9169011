SKILL = "Pattern Recognition"
HINT = "Count how many letters each step skips in the alphabet and skip the same again."
DESCRIPTION = "Continue a sequence of letters that moves through the alphabet in equal jumps."

ABC = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class SeatRows(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.jump = self.rng.randint(1, 3)
        start = self.rng.randint(0, 25 - 4 * self.jump)
        self.letters = [ABC[start + i * self.jump] for i in range(4)]
        self.answer = ABC[start + 4 * self.jump] if start + 4 * self.jump < 26 else ABC[(start + 4 * self.jump) % 26]
        return f"Seat rows called in order: {' '.join(self.letters)} ... Which letter is next? Answer with \\boxed{{letter}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice.upper() == self.answer:
            return self.finish("That row is next!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.answer}.", 0.0)
        if len(choice) != 1 or not choice.isalpha():
            return self.reply("Answer with one letter.")
        return self.reply(f"No, the answer comes {'later' if choice.upper() < self.answer else 'earlier'} in the alphabet.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.answer]

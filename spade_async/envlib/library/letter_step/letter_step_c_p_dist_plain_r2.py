SKILL = "Pattern Recognition"
HINT = "Count how many letters each step skips in the alphabet and skip the same again."
DESCRIPTION = "Continue a sequence of letters that moves through the alphabet in equal jumps."

ABC = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class AlphabetJump(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.jump = self.rng.randint(1, 5)
        start = self.rng.randint(0, 25 - 4 * self.jump)
        self.letters = [ABC[start + i * self.jump] for i in range(4)]
        self.answer = ABC[start + 4 * self.jump] if start + 4 * self.jump < 26 else ABC[(start + 4 * self.jump) % 26]
        return f"Letters: {' '.join(self.letters)} ... Which letter is next? Answer with \\boxed{{letter}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice.upper() == self.answer:
            return self.finish("Correct letter.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.answer}.", 0.3 if len(choice) == 1 and abs(ord(choice.upper()) - ord(self.answer)) == 1 else 0.0)
        if len(choice) != 1 or not choice.isalpha():
            return self.reply("Answer with one letter.")
        return self.reply(f"No, you are {abs(ord(choice.upper()) - ord(self.answer))} letters off.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.answer]

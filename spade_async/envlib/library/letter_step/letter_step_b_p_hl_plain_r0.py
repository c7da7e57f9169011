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
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice.upper() == self.answer:
            return "Correct letter.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.answer}.", 0.3 if len(choice) == 1 and abs(ord(choice.upper()) - ord(self.answer)) == 1 else 0.0, True, False, {}
        if len(choice) != 1 or not choice.isalpha():
            return "Answer with one letter.", 0.0, False, False, {}
        return f"No, the answer comes {'later' if choice.upper() < self.answer else 'earlier'} in the alphabet.", 0.0, False, False, {}

    def solution(self):
        return [self.answer]

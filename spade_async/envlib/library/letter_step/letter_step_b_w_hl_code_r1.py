SKILL = "Pattern Recognition"
HINT = "Count how many letters each step skips in the alphabet and skip the same again."
DESCRIPTION = "Continue a sequence of letters that moves through the alphabet in equal jumps."

ABC = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class LetterCode(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.jump = self.rng.randint(1, 4)
        start = self.rng.randint(0, 25 - 4 * self.jump)
        self.letters = [ABC[start + i * self.jump] for i in range(4)]
        self.answer = ABC[start + 4 * self.jump] if start + 4 * self.jump < 26 else ABC[(start + 4 * self.jump) % 26]
        return f"A secret code: {' '.join(self.letters)} ... Which letter is next? Answer with \\boxed{{letter}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice.upper() == self.answer:
            return self.say("Code cracked!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.answer}.", 0.0, True)
        if len(choice) != 1 or not choice.isalpha():
            return self.say("Answer with one letter.")
        return self.say(f"No, the answer comes {'later' if choice.upper() < self.answer else 'earlier'} in the alphabet.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.answer]

SKILL = "Pattern Recognition"
HINT = "Write down the differences between neighbours: they grow by the same amount each time."
DESCRIPTION = "Continue a sequence whose gaps grow steadily."


class GapGrowth(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        value, gap, self.grow = self.rng.randint(0, 9), self.rng.randint(1, 4), self.rng.randint(1, 3)
        self.seq = []
        for _ in range(5):
            self.seq.append(value)
            value, gap = value + gap, gap + self.grow
        self.answer = value
        return f"Numbers: {', '.join(map(str, self.seq))}, ... Answer the next number with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.say("Correct!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The next number was {self.answer}.", 0.0, True)
        return self.say(f"Not {guess}: the answer is {'bigger' if guess < self.answer else 'smaller'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Write down the differences between neighbours: they grow by the same amount each time."
DESCRIPTION = "Continue a sequence whose gaps grow steadily."


class RollingBall(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        value, gap, self.grow = self.rng.randint(0, 9), self.rng.randint(1, 4), self.rng.randint(1, 2)
        self.seq = []
        for _ in range(5):
            self.seq.append(value)
            value, gap = value + gap, gap + self.grow
        self.answer = value
        return f"A ball rolls faster each second; its positions: {', '.join(map(str, self.seq))}, ... Answer the next number with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.say("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.say("The ball is there!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The next number was {self.answer}.", 0.4 if abs(guess - self.answer) <= self.grow else 0.0, True)
        return self.say(f"That would be a gap of {guess - self.seq[-1]}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

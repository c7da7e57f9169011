SKILL = "Pattern Recognition"
HINT = "Write down the differences between neighbours: they grow by the same amount each time."
DESCRIPTION = "Continue a sequence whose gaps grow steadily."


class RollingBall(GameEnv):
    max_turns = 3

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
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.answer:
            return "The ball is there!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The next number was {self.answer}.", 0.0, True, False, {}
        return f"Not {guess}: the answer is {'bigger' if guess < self.answer else 'smaller'}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Write down the differences between neighbours: they grow by the same amount each time."
DESCRIPTION = "Continue a sequence whose gaps grow steadily."


class GapGrowth(GameEnv):
    max_turns = 2

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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.finish("Correct!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The next number was {self.answer}.", 0.4 if abs(guess - self.answer) <= self.grow else 0.0)
        return self.reply(f"Not {guess}: the answer is {'bigger' if guess < self.answer else 'smaller'}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Every term is the sum of the two before it: add the last two numbers."
DESCRIPTION = "Continue a sequence where each term adds up the two before it."


class BlockTower(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.seq = [self.rng.randint(1, 5), self.rng.randint(1, 5)]
        while len(self.seq) < 6:
            self.seq.append(self.seq[-1] + self.seq[-2])
        self.answer = self.seq[-1] + self.seq[-2]
        return f"Blocks in each tower level: {', '.join(map(str, self.seq))}, ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.answer:
            return "Tower complete!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It continues with {self.answer}.", 0.0, True, False, {}
        return f"{guess} is {abs(guess - self.answer)} away.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]

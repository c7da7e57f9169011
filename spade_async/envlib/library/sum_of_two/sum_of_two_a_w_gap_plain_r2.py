SKILL = "Pattern Recognition"
HINT = "Every term is the sum of the two before it: add the last two numbers."
DESCRIPTION = "Continue a sequence where each term adds up the two before it."


class AddLastTwo(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.seq = [self.rng.randint(1, 9), self.rng.randint(1, 9)]
        while len(self.seq) < 6:
            self.seq.append(self.seq[-1] + self.seq[-2])
        self.answer = self.seq[-1] + self.seq[-2]
        return f"Sequence: {', '.join(map(str, self.seq))}, ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.finish("Correct.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It continues with {self.answer}.", 0.0)
        return self.reply(f"{guess} is {abs(guess - self.answer)} away.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Two rules take turns: look at the odd positions and the even positions separately."
DESCRIPTION = "Continue a sequence made of two changes that alternate."


class TideLevel(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        up, down = self.rng.randint(3, 9), self.rng.randint(1, 2)
        value, self.seq = self.rng.randint(1, 10), []
        for i in range(7):
            self.seq.append(value)
            value += up if i % 2 == 0 else -down
        self.answer = value
        shown = " / ".join(str(v) for v in self.seq)
        return f"Water level readings: {shown} / ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.finish("Tide predicted!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The rule gives {self.answer}.", 0.0)
        return self.reply("Wrong, try {'higher' if guess < self.answer else 'lower'}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

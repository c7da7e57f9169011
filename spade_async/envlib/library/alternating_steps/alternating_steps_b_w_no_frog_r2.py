SKILL = "Pattern Recognition"
HINT = "Two rules take turns: look at the odd positions and the even positions separately."
DESCRIPTION = "Continue a sequence made of two hops that alternate."


class FrogHops(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        up, down = self.rng.randint(3, 9), self.rng.randint(1, 2)
        value, self.seq = self.rng.randint(1, 10), []
        for i in range(7):
            self.seq.append(value)
            value += up if i % 2 == 0 else -down
        self.answer = value
        shown = " , ".join(str(v) for v in self.seq)
        return f"A frog hops forward then slips back: {shown} , ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.reply("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.finish("The frog lands there!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The rule gives {self.answer}.", 0.0)
        return self.reply("No. Compare every second number.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Pattern Recognition"
HINT = "Two rules take turns: look at the odd positions and the even positions separately."
DESCRIPTION = "Continue a sequence made of two changes that alternate."


class TideLevel(GameEnv):
    max_turns = 2

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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.say("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.say("Tide predicted!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The rule gives {self.answer}.", round(max(0.0, 0.9 - abs(guess - self.answer) / 10), 2), True)
        return self.say("No. Compare every second number.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

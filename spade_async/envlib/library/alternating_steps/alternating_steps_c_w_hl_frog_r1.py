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
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.say("The frog lands there!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The rule gives {self.answer}.", 0.0, True)
        return self.say("Wrong, try {'higher' if guess < self.answer else 'lower'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

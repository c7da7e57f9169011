SKILL = "Pattern Recognition"
HINT = "Two rules take turns: look at the odd positions and the even positions separately."
DESCRIPTION = "Continue a sequence made of two moves that alternate."


class StairClimb(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        up, down = self.rng.randint(3, 9), self.rng.randint(1, 2)
        value, self.seq = self.rng.randint(1, 10), []
        for i in range(7):
            self.seq.append(value)
            value += up if i % 2 == 0 else -down
        self.answer = value
        shown = " -> ".join(str(v) for v in self.seq)
        return f"A climber goes up then down a little: {shown} -> ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.say("Right step!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The rule gives {self.answer}.", round(max(0.0, 0.9 - abs(guess - self.answer) / 10), 2), True)
        return self.say("Wrong, try {'higher' if guess < self.answer else 'lower'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

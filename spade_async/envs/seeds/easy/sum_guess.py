SKILL = "Mathematical Reasoning"
HINT = "Add the two numbers in the question and answer with the sum, e.g. \\boxed{12}."
DESCRIPTION = "Add two small numbers; wrong answers get higher/lower feedback."


class SumGuess(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.a, self.b = self.rng.randint(1, 9), self.rng.randint(1, 9)
        return f"What is {self.a} + {self.b}? Answer with \\boxed{{number}}. You have 3 tries.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit():
            return "Answer with a number, like \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        if int(text) == self.a + self.b:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Out of tries: {self.a} + {self.b} = {self.a + self.b}.", 0.0, True, False, {}
        hint = "higher" if int(text) < self.a + self.b else "lower"
        return f"No. The answer is {hint} than {text}. Try again.", 0.0, False, False, {}

    def solution(self):
        return [str(self.a + self.b)]

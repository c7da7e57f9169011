SKILL = "Mathematical Reasoning"
HINT = "Try pairs that add up to the sum and keep the one whose product matches; answer the smaller number first."
DESCRIPTION = "Find two hidden side lengths from their sum and their product."


class FieldSides(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.a = self.rng.randint(2, 15)
        self.b = self.rng.randint(self.a, 15)
        total, product = self.a + self.b, self.a * self.b
        return f"A field is a rectangle. Their sum is {total} and their product is {product}. Answer with \\boxed{{small big}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 5 for p in parts):
            return self.say("Answer with two numbers, like \\boxed{3 8}.")
        x, y = sorted(int(p) for p in parts)
        if (x, y) == (self.a, self.b):
            return self.say("The field is measured.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The side lengths were {self.a} and {self.b}.", 0.3 if x + y == self.a + self.b else 0.0, True)
        return self.say(f"Wrong pair. {(x == self.a) + (y == self.b)} of the two numbers are right.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"{self.a} {self.b}"]

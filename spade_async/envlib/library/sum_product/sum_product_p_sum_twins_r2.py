SKILL = "Mathematical Reasoning"
HINT = "Try pairs that add up to the sum and keep the one whose product matches; answer the smaller number first."
DESCRIPTION = "Find two hidden ages from their sum and their product."


class TwinAges(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.a = self.rng.randint(2, 12)
        self.b = self.rng.randint(self.a, 12)
        total, product = self.a + self.b, self.a * self.b
        return f"Two cousins tell you about their ages. Their sum is {total} and their product is {product}. Answer with \\boxed{{small big}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 5 for p in parts):
            return self.reply("Answer with two numbers, like \\boxed{3 8}.")
        x, y = sorted(int(p) for p in parts)
        if (x, y) == (self.a, self.b):
            return self.finish("Yes, those are our ages!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The ages were {self.a} and {self.b}.", 0.3 if x + y == self.a + self.b else 0.0)
        return self.reply(f"No. {x} + {y} = {x + y} and {x} * {y} = {x * y}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"{self.a} {self.b}"]

SKILL = "Mathematical Reasoning"
HINT = "Try pairs that add up to the sum and keep the one whose product matches; answer the smaller number first."
DESCRIPTION = "Find two hidden numbers from their sum and their product."


class TwoDice(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.a = self.rng.randint(2, 9)
        self.b = self.rng.randint(self.a, 9)
        total, product = self.a + self.b, self.a * self.b
        return f"Two hidden tiles carry numbers. Their sum is {total} and their product is {product}. Answer with \\boxed{{small big}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 5 for p in parts):
            return self.say("Answer with two numbers, like \\boxed{3 8}.")
        x, y = sorted(int(p) for p in parts)
        if (x, y) == (self.a, self.b):
            return self.say("Both tiles flip over: correct!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The numbers were {self.a} and {self.b}.", 0.0, True)
        return self.say("That pair does not fit both clues. Try again.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"{self.a} {self.b}"]

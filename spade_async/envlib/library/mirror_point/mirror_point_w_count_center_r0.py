SKILL = "Spatial Reasoning"
HINT = "Through (m, m) both coordinates become 2*m minus themselves."
DESCRIPTION = "Reflect a point through a centre point and give its new coordinates."


class SpinHalf(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.x, self.y = self.rng.randint(0, 9), self.rng.randint(0, 9)
        self.m = self.rng.randint(2, 7)
        self.answer = (2 * self.m - self.x, 2 * self.m - self.y)
        return f"A mirror puzzle. The point is at x={self.x}, y={self.y}. Reflect it through the point ({self.m}, {self.m}). Answer with \\boxed{{x y}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").replace(",", " ").split()
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() and len(p) < 4 for p in parts):
            return "Answer with two numbers, like \\boxed{3 5}.", 0.0, False, self.turn >= self.max_turns, {}
        got = (int(parts[0]), int(parts[1]))
        if got == self.answer:
            return "Perfect reflection!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The reflection is {self.answer[0]} {self.answer[1]}.", 0.0, True, False, {}
        return f"{(got[0] == self.answer[0]) + (got[1] == self.answer[1])} of 2 coordinates are right.", 0.0, False, False, {}

    def solution(self):
        return [f"{self.answer[0]} {self.answer[1]}"]

SKILL = "Spatial Reasoning"
HINT = "Across y=m the y becomes 2*m - y and x stays the same."
DESCRIPTION = "Reflect a point in the surface of a lake and give its new coordinates."


class LakeReflection(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.x, self.y = self.rng.randint(0, 9), self.rng.randint(0, 9)
        self.m = self.rng.randint(2, 7)
        self.answer = (self.x, 2 * self.m - self.y)
        return f"Where is the image? The point is at x={self.x}, y={self.y}. Reflect it in the water line y={self.m}. Answer with \\boxed{{x y}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").replace(",", " ").split()
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() and len(p) < 4 for p in parts):
            return "Answer with two numbers, like \\boxed{3 5}.", 0.0, False, self.turn >= self.max_turns, {}
        got = (int(parts[0]), int(parts[1]))
        if got == self.answer:
            return "Exactly there.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The reflection is {self.answer[0]} {self.answer[1]}.", 0.3 * ((got[0] == self.answer[0]) + (got[1] == self.answer[1])), True, False, {}
        return f"x is {'right' if got[0] == self.answer[0] else 'wrong'}, y is {'right' if got[1] == self.answer[1] else 'wrong'}.", 0.0, False, False, {}

    def solution(self):
        return [f"{self.answer[0]} {self.answer[1]}"]

SKILL = "Spatial Reasoning"
HINT = "Compare your position with the floor: step up while you are below it and down while you are above it."
DESCRIPTION = "Walk along a lift shaft to reach the floor, one step at a time."

STEPS = {"up": 1, "down": -1}


class LiftFloor(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.pos = self.rng.randint(0, 9)
        self.goal = self.rng.choice([p for p in range(10) if 2 <= abs(p - self.pos) <= 4])
        return f"The lift serves floors 0 to 9. You are at {self.pos} and the floor is at {self.goal}. Move with \\boxed{{up}} or \\boxed{{down}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if choice not in STEPS:
            return "Only up or down.", 0.0, False, self.turn >= self.max_turns, {}
        self.pos = min(9, max(0, self.pos + STEPS[choice]))
        if self.pos == self.goal:
            return "Ding! Right floor.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "The lift is switched off.", round(max(0.0, 0.9 - 0.2 * abs(self.goal - self.pos)), 2), True, False, {}
        return f"Now {abs(self.goal - self.pos)} away from the floor.", 0.0, False, False, {}

    def solution(self):
        move = "up" if self.goal > self.pos else "down"
        return [move] * abs(self.goal - self.pos)

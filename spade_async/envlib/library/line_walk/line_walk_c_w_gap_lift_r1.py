SKILL = "Spatial Reasoning"
HINT = "Compare your position with the floor: step up while you are below it and down while you are above it."
DESCRIPTION = "Walk along a lift shaft to reach the floor, one step at a time."

STEPS = {"up": 1, "down": -1}


class LiftFloor(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.pos = self.rng.randint(0, 9)
        self.goal = self.rng.choice([p for p in range(10) if 2 <= abs(p - self.pos) <= 4])
        return f"The lift serves floors 0 to 9. You are at {self.pos} and the floor is at {self.goal}. Move with \\boxed{{up}} or \\boxed{{down}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice not in STEPS:
            return self.say("Only up or down.")
        self.pos = min(9, max(0, self.pos + STEPS[choice]))
        if self.pos == self.goal:
            return self.say("Ding! Right floor.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say("The lift is switched off.", 0.0, True)
        return self.say(f"Now {abs(self.goal - self.pos)} away from the floor.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        move = "up" if self.goal > self.pos else "down"
        return [move] * abs(self.goal - self.pos)

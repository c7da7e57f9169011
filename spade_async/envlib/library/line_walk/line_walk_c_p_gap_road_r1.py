SKILL = "Spatial Reasoning"
HINT = "Compare your position with the inn: step east while you are below it and west while you are above it."
DESCRIPTION = "Walk along a road to reach the inn, one step at a time."

STEPS = {"east": 1, "west": -1}


class RoadWalk(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.pos = self.rng.randint(0, 9)
        self.goal = self.rng.choice([p for p in range(10) if 2 <= abs(p - self.pos) <= 4])
        return f"A road runs from 0 to 9. You are at {self.pos} and the inn is at {self.goal}. Move with \\boxed{{east}} or \\boxed{{west}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice not in STEPS:
            return self.say("Only east or west.")
        self.pos = min(9, max(0, self.pos + STEPS[choice]))
        if self.pos == self.goal:
            return self.say("You reach the inn!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say("Night falls before you reach the inn.", round(max(0.0, 0.9 - 0.2 * abs(self.goal - self.pos)), 2), True)
        return self.say(f"Now {abs(self.goal - self.pos)} away from the inn.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        move = "east" if self.goal > self.pos else "west"
        return [move] * abs(self.goal - self.pos)

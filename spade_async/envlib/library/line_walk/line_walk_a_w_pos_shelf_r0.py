SKILL = "Spatial Reasoning"
HINT = "Compare your position with the book: step right while you are below it and left while you are above it."
DESCRIPTION = "Walk along a shelf to reach the book, one step at a time."

STEPS = {"right": 1, "left": -1}


class ShelfSlide(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.pos = self.rng.randint(0, 9)
        self.goal = self.rng.choice([p for p in range(10) if 2 <= abs(p - self.pos) <= 4])
        return f"Your hand slides along a shelf of 10 slots. You are at {self.pos} and the book is at {self.goal}. Move with \\boxed{{right}} or \\boxed{{left}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if choice not in STEPS:
            return "Only right or left.", 0.0, False, self.turn >= self.max_turns, {}
        self.pos = min(9, max(0, self.pos + STEPS[choice]))
        if self.pos == self.goal:
            return "You grab the book.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "Too slow, the library closes.", 0.0, True, False, {}
        return f"You are at {self.pos}.", 0.0, False, False, {}

    def solution(self):
        move = "right" if self.goal > self.pos else "left"
        return [move] * abs(self.goal - self.pos)

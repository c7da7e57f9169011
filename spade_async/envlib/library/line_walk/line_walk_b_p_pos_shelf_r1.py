SKILL = "Spatial Reasoning"
HINT = "Compare your position with the book: step right while you are below it and left while you are above it."
DESCRIPTION = "Walk along a shelf to reach the book, one step at a time."

STEPS = {"right": 1, "left": -1}


class ShelfSlide(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.pos = self.rng.randint(0, 9)
        self.goal = self.rng.choice([p for p in range(10) if 2 <= abs(p - self.pos) <= 4])
        return f"Your hand slides along a shelf of 10 slots. You are at {self.pos} and the book is at {self.goal}. Move with \\boxed{{right}} or \\boxed{{left}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice not in STEPS:
            return self.say("Only right or left.")
        self.pos = min(9, max(0, self.pos + STEPS[choice]))
        if self.pos == self.goal:
            return self.say("You grab the book.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say("Too slow, the library closes.", round(max(0.0, 0.9 - 0.2 * abs(self.goal - self.pos)), 2), True)
        return self.say(f"You are at {self.pos}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        move = "right" if self.goal > self.pos else "left"
        return [move] * abs(self.goal - self.pos)

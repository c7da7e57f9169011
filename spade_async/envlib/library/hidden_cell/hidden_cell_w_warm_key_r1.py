SKILL = "Spatial Reasoning"
HINT = "Hot means one step away, warm means two or three; narrow the cells down with each reply."
DESCRIPTION = "Find a hidden cell on a 4 by 4 grid; each guess tells you hot, warm or cold."


class LostKey(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.row = self.rng.randint(1, 4)
        self.col = self.rng.randint(1, 4)
        return "You dropped a key on the tiled floor. Rows and columns go from 1 to 4. Guess with \\boxed{row col}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 3 for p in parts):
            return self.say("Guess a cell like \\boxed{2 3}.")
        r, c = int(parts[0]), int(parts[1])
        far = abs(r - self.row) + abs(c - self.col)
        if far == 0:
            return self.say("You pick up the key.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was at {self.row} {self.col}.", 0.0, True)
        word = "hot" if far == 1 else "warm" if far <= 3 else "cold"
        return self.say(f"{word.capitalize()}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"{self.row} {self.col}"]

SKILL = "Spatial Reasoning"
HINT = "Each reply says whether the row and column should go up or down; move that way."
DESCRIPTION = "Find a hidden cell on a 5 by 5 grid; each guess tells you the direction."


class BuriedMine(GameEnv):
    max_turns = 9

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.row = self.rng.randint(1, 5)
        self.col = self.rng.randint(1, 5)
        return "A mine is buried in the field. Rows and columns go from 1 to 5. Guess with \\boxed{row col}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 3 for p in parts):
            return self.say("Guess a cell like \\boxed{2 3}.")
        r, c = int(parts[0]), int(parts[1])
        far = abs(r - self.row) + abs(c - self.col)
        if far == 0:
            return self.say("Mine found and defused!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was at {self.row} {self.col}.", round(max(0.0, 0.9 - 0.15 * far), 2), True)
        rows = "higher row" if self.row > r else "lower row" if self.row < r else "right row"
        cols = "higher column" if self.col > c else "lower column" if self.col < c else "right column"
        return self.say(f"Try a {rows} and a {cols}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"{self.row} {self.col}"]

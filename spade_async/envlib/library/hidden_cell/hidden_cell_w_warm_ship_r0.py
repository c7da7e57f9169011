SKILL = "Spatial Reasoning"
HINT = "Hot means one step away, warm means two or three; narrow the cells down with each reply."
DESCRIPTION = "Find a hidden cell on a 6 by 6 grid; each guess tells you hot, warm or cold."


class SunkenShip(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.row = self.rng.randint(1, 6)
        self.col = self.rng.randint(1, 6)
        return "A ship sank somewhere in the bay. Rows and columns go from 1 to 6. Guess with \\boxed{row col}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 3 for p in parts):
            return "Guess a cell like \\boxed{2 3}.", 0.0, False, self.turn >= self.max_turns, {}
        r, c = int(parts[0]), int(parts[1])
        far = abs(r - self.row) + abs(c - self.col)
        if far == 0:
            return "Divers reach the wreck!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was at {self.row} {self.col}.", 0.0, True, False, {}
        word = "hot" if far == 1 else "warm" if far <= 3 else "cold"
        return f"{word.capitalize()}.", 0.0, False, False, {}

    def solution(self):
        return [f"{self.row} {self.col}"]

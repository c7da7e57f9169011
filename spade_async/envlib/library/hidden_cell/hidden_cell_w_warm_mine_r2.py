SKILL = "Spatial Reasoning"
HINT = "Hot means one step away, warm means two or three; narrow the cells down with each reply."
DESCRIPTION = "Find a hidden cell on a 5 by 5 grid; each guess tells you hot, warm or cold."


class BuriedMine(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.row = self.rng.randint(1, 5)
        self.col = self.rng.randint(1, 5)
        return "A mine is buried in the field. Rows and columns go from 1 to 5. Guess with \\boxed{row col}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 3 for p in parts):
            return self.reply("Guess a cell like \\boxed{2 3}.")
        r, c = int(parts[0]), int(parts[1])
        far = abs(r - self.row) + abs(c - self.col)
        if far == 0:
            return self.finish("Mine found and defused!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was at {self.row} {self.col}.", 0.0)
        word = "hot" if far == 1 else "warm" if far <= 3 else "cold"
        return self.reply(f"{word.capitalize()}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"{self.row} {self.col}"]

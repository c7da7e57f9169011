SKILL = "Spatial Reasoning"
HINT = "The reply is the number of rows plus columns away; keep only cells at that distance from every guess."
DESCRIPTION = "Find a hidden cell on a 6 by 6 grid; each guess tells you its distance."


class SunkenShip(GameEnv):
    max_turns = 9

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.row = self.rng.randint(1, 6)
        self.col = self.rng.randint(1, 6)
        return "A ship sank somewhere in the bay. Rows and columns go from 1 to 6. Guess with \\boxed{row col}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 3 for p in parts):
            return self.reply("Guess a cell like \\boxed{2 3}.")
        r, c = int(parts[0]), int(parts[1])
        far = abs(r - self.row) + abs(c - self.col)
        if far == 0:
            return self.finish("Divers reach the wreck!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was at {self.row} {self.col}.", round(max(0.0, 0.9 - 0.15 * far), 2))
        return self.reply(f"Steps away: {far}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"{self.row} {self.col}"]

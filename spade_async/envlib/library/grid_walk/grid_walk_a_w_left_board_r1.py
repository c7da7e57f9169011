SKILL = "Spatial Reasoning"
HINT = "Go around the pit: first move sideways until the column matches, then move along the rows to the crown square."
DESCRIPTION = "Walk on a small grid to the crown square without stepping onto the pit."

MOVES = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class BoardPawn(GameEnv):
    max_turns = 10

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.at = (self.rng.randint(0, 4), self.rng.randint(0, 4))
        cells = [(r, c) for r in range(5) for c in range(5) if 2 <= abs(r - self.at[0]) + abs(c - self.at[1]) <= 5]
        self.goal = self.rng.choice(cells)
        path = [(self.at[0], c) for c in range(5)] + [(r, self.goal[1]) for r in range(5)]
        self.block = self.rng.choice([x for x in cells if x not in path and x != self.goal] or [(9, 9)])
        return f"A pawn on a 5 by 5 board. You are at {self.at}, the crown square at {self.goal}, a pit at {self.block}. (row, col); north lowers the row. Move with \\boxed{{north}}, south, east or west.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if choice not in MOVES:
            return self.say("Move north, south, east or west.")
        r, c = self.at[0] + MOVES[choice][0], self.at[1] + MOVES[choice][1]
        if 0 <= r < 5 and 0 <= c < 5 and (r, c) != self.block:
            self.at = (r, c)
        if self.at == self.goal:
            return self.say("The pawn is crowned!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say("The pawn is stuck.", 0.0, True)
        return self.say(f"At {self.at}; the crown square is {abs(self.goal[0] - self.at[0]) + abs(self.goal[1] - self.at[1])} steps away.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        dr, dc = self.goal[0] - self.at[0], self.goal[1] - self.at[1]
        return ["east" if dc > 0 else "west"] * abs(dc) + ["south" if dr > 0 else "north"] * abs(dr)

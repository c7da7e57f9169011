SKILL = "Spatial Reasoning"
HINT = "Go around the fountain: first move east or west until the column matches, then move along the rows to the exit."
DESCRIPTION = "Walk on a small grid to the exit without stepping onto the fountain."

MOVES = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class MallWalk(GameEnv):
    max_turns = 10

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.at = (self.rng.randint(0, 4), self.rng.randint(0, 4))
        cells = [(r, c) for r in range(5) for c in range(5) if 2 <= abs(r - self.at[0]) + abs(c - self.at[1]) <= 5]
        self.goal = self.rng.choice(cells)
        path = [(self.at[0], c) for c in range(5)] + [(r, self.goal[1]) for r in range(5)]
        self.block = self.rng.choice([x for x in cells if x not in path and x != self.goal] or [(9, 9)])
        return f"You are lost in a mall. You are at {self.at}, the exit at {self.goal}, a fountain at {self.block}. (row, col); north lowers the row. Move with \\boxed{{north}}, south, east or west.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice not in MOVES:
            return "Move north, south, east or west.", 0.0, False, self.turn >= self.max_turns, {}
        r, c = self.at[0] + MOVES[choice][0], self.at[1] + MOVES[choice][1]
        if 0 <= r < 5 and 0 <= c < 5 and (r, c) != self.block:
            self.at = (r, c)
        if self.at == self.goal:
            return "You are outside!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "The mall closes.", 0.0, True, False, {}
        return f"You are at {self.at}.", 0.0, False, False, {}

    def solution(self):
        dr, dc = self.goal[0] - self.at[0], self.goal[1] - self.at[1]
        return ["east" if dc > 0 else "west"] * abs(dc) + ["south" if dr > 0 else "north"] * abs(dr)

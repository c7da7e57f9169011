SKILL = "Spatial Reasoning"
HINT = "Go around the pond: first move sideways until the column matches, then move along the rows to the gate."
DESCRIPTION = "Walk on a small grid to the gate without stepping onto the pond."

MOVES = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class GardenPath(GameEnv):
    max_turns = 9

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.at = (self.rng.randint(0, 4), self.rng.randint(0, 4))
        cells = [(r, c) for r in range(5) for c in range(5) if 2 <= abs(r - self.at[0]) + abs(c - self.at[1]) <= 5]
        self.goal = self.rng.choice(cells)
        path = [(self.at[0], c) for c in range(5)] + [(r, self.goal[1]) for r in range(5)]
        self.block = self.rng.choice([x for x in cells if x not in path and x != self.goal] or [(9, 9)])
        return f"A 5 by 5 garden. You are at {self.at}, the gate at {self.goal}, a pond at {self.block}. (row, col); north lowers the row. Move with \\boxed{{north}}, south, east or west.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice not in MOVES:
            return self.reply("Move north, south, east or west.")
        r, c = self.at[0] + MOVES[choice][0], self.at[1] + MOVES[choice][1]
        if 0 <= r < 5 and 0 <= c < 5 and (r, c) != self.block:
            self.at = (r, c)
        if self.at == self.goal:
            return self.finish("Through the gate!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish("The gardener sends you home.", round(0.9 - 0.1 * (abs(self.goal[0] - self.at[0]) + abs(self.goal[1] - self.at[1])), 2))
        return self.reply(f"At {self.at}; the gate is {abs(self.goal[0] - self.at[0]) + abs(self.goal[1] - self.at[1])} steps away.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        dr, dc = self.goal[0] - self.at[0], self.goal[1] - self.at[1]
        return ["east" if dc > 0 else "west"] * abs(dc) + ["south" if dr > 0 else "north"] * abs(dr)

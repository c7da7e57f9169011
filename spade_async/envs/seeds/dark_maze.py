SKILL = "Spatial Reasoning"
HINT = (
    "A path to the exit using only 'down' and 'right' moves always exists, and 10 fuel allows "
    "2 bumps beyond its 8 moves. Never go up or left: move down or right, and after a bump try "
    "the other direction. Keep track of the cells you found walls in."
)
DESCRIPTION = "Walk a 5x5 grid with invisible walls from (0, 0) to (4, 4) on 10 units of fuel."
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class DarkMaze(GameEnv):
    max_turns = 12

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.path = self.rng.sample(["down"] * 4 + ["right"] * 4, 8)
        open_cells, r, c = {(0, 0)}, 0, 0
        for move in self.path:
            r, c = r + MOVES[move][0], c + MOVES[move][1]
            open_cells.add((r, c))
        cells = [(r, c) for r in range(5) for c in range(5) if (r, c) not in open_cells]
        self.walls = set(self.rng.sample(cells, 7))
        self.pos, self.fuel = (0, 0), 10
        return (
            "You stand at (0, 0), the top-left cell of a dark 5x5 grid (row, column). The exit is "
            "at (4, 4). Some cells hold invisible walls. Each move costs 1 fuel, even when a wall "
            "blocks it; you have 10 fuel. Act with \\boxed{move up|down|left|right}."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split()).removeprefix("move ")
        if cmd not in MOVES:
            return self._wait("Invalid action. Use \\boxed{move DIR}, DIR one of up, down, left, right.")
        self.fuel -= 1
        nxt = (self.pos[0] + MOVES[cmd][0], self.pos[1] + MOVES[cmd][1])
        blocked = nxt in self.walls or max(nxt) > 4 or min(nxt) < 0
        self.pos = self.pos if blocked else nxt
        if self.pos == (4, 4):
            return "You reached the exit!", 1.0, True, False, {}
        if self.fuel == 0:
            partial = round(0.25 * (self.pos[0] + self.pos[1]) / 8, 3)
            return f"Out of fuel at {self.pos}.", partial, True, False, {}
        text = "Blocked by a wall or the edge." if blocked else "You moved."
        return self._wait(f"{text} Now at {self.pos}, fuel {self.fuel}.")

    def solution(self):
        return [f"move {name}" for name in self.path]

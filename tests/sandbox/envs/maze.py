"""Benign fixture: a tiny grid walk with its own reset/step (no base class), imports and a helper."""
# ruff: noqa: F821 - GameEnv and parse_boxed are injected by the sandbox

import random
from dataclasses import dataclass

SKILL = "Spatial Reasoning"
HINT = "Walk right until the column matches, then down."
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


@dataclass
class Pos:
    row: int
    col: int


def render(pos, goal, size):
    return "\n".join(
        "".join(
            "A" if (r, c) == (pos.row, pos.col) else "G" if (r, c) == (goal.row, goal.col) else "." for c in range(size)
        )
        for r in range(size)
    )


class GridWalk:
    size = 4

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.pos = Pos(0, 0)
        self.goal = Pos(rng.randrange(1, self.size), rng.randrange(1, self.size))
        self.turn = 0
        return render(self.pos, self.goal, self.size) + "\nMove with \\boxed{up|down|left|right}.", {"size": self.size}

    def step(self, action):
        self.turn += 1
        move = MOVES.get((parse_boxed(action) or "").strip().lower())
        if move is not None:
            self.pos = Pos(
                min(max(self.pos.row + move[0], 0), self.size - 1), min(max(self.pos.col + move[1], 0), self.size - 1)
            )
        won = (self.pos.row, self.pos.col) == (self.goal.row, self.goal.col)
        obs = render(self.pos, self.goal, self.size) if move else "Unknown move."
        return obs, 1.0 if won else 0.0, won, not won and self.turn >= 8, {}

    def solution(self):
        return ["\\boxed{right}"] * self.goal.col + ["\\boxed{down}"] * self.goal.row

SKILL = "Spatial Reasoning"
HINT = (
    "Scan two corners: d1 from (0, 0) equals r + c and d2 from (0, 4) equals r + 4 - c. "
    "So c = (d1 - d2 + 4) / 2 and r = d1 - c. Two scans and one dig always win."
)
DESCRIPTION = "Locate a treasure on a 5x5 grid from Manhattan-distance scans, then dig once."


class TreasureScan(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.spot = (self.rng.randrange(5), self.rng.randrange(5))
        return (
            "A treasure is buried in one cell of a 5x5 grid; rows and columns are numbered 0-4. "
            "Commands: \\boxed{scan R C} tells the Manhattan distance |R - r| + |C - c| from cell "
            "(R, C) to the treasure; \\boxed{dig R C} digs once and ends the game. "
            f"You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().replace(",", " ").split())
        m = re.fullmatch(r"(scan|dig) ([0-4]) ([0-4])", cmd)
        if not m:
            return self._wait("Invalid action. Use \\boxed{scan R C} or \\boxed{dig R C} with R, C in 0-4.")
        r, c = int(m.group(2)), int(m.group(3))
        dist = abs(r - self.spot[0]) + abs(c - self.spot[1])
        if m.group(1) == "scan":
            return self._wait(f"Scan at ({r}, {c}): distance {dist}.")
        if dist == 0:
            return "You dug up the treasure!", 1.0, True, False, {}
        partial = round(0.5 * max(0.0, 1 - dist / 4), 3)
        return f"Nothing here. The treasure was at {self.spot}.", partial, True, False, {}

    def solution(self):
        return ["dig {} {}".format(*self.spot)]

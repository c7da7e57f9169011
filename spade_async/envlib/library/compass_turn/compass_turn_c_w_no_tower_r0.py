SKILL = "Spatial Reasoning"
HINT = "Clockwise order is north, east, south, west: one step clockwise is right, one step back is left, two steps is around."
DESCRIPTION = "Turn once to face the tower; say left, right or around."

DIRS = ["north", "east", "south", "west"]
TURNS = {"right": 1, "around": 2, "left": 3}


class FaceTower(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.facing = self.rng.randrange(4)
        self.want = (self.facing + self.rng.randint(1, 3)) % 4
        return f"You stand in a field. You face {DIRS[self.facing]}; the tower is to the {DIRS[self.want]}. Turn with \\boxed{{left}}, \\boxed{{right}} or \\boxed{{around}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice not in TURNS:
            return "Say left, right or around.", 0.0, False, self.turn >= self.max_turns, {}
        now = (self.facing + TURNS[choice]) % 4
        if now == self.want:
            return "You see the tower!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"You end up facing {DIRS[now]}.", 0.0, True, False, {}
        return "Wrong way. Think clockwise.", 0.0, False, False, {}

    def solution(self):
        return [next(t for t, k in TURNS.items() if (self.facing + k) % 4 == self.want)]

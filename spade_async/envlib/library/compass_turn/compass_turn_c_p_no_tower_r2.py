SKILL = "Spatial Reasoning"
HINT = "Clockwise order is north, east, south, west: one step clockwise is right, one step back is left, two steps is around."
DESCRIPTION = "Turn once to face the tower; say left, right or around."

DIRS = ["north", "east", "south", "west"]
TURNS = {"right": 1, "around": 2, "left": 3}


class FaceTower(GameEnv):
    max_turns = 1

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
            return self.reply("Say left, right or around.")
        now = (self.facing + TURNS[choice]) % 4
        if now == self.want:
            return self.finish("You see the tower!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"You end up facing {DIRS[now]}.", 0.4 if (now - self.want) % 2 else 0.0)
        return self.reply("Wrong way. Think clockwise.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [next(t for t, k in TURNS.items() if (self.facing + k) % 4 == self.want)]

SKILL = "Spatial Reasoning"
HINT = "Clockwise order is north, east, south, west: one step clockwise is right, one step back is left, two steps is around."
DESCRIPTION = "Turn once to face the harbour; say left, right or around."

DIRS = ["north", "east", "south", "west"]
TURNS = {"right": 1, "around": 2, "left": 3}


class SteerShip(GameEnv):
    max_turns = 1

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.facing = self.rng.randrange(4)
        self.want = (self.facing + self.rng.randint(1, 3)) % 4
        return f"You are the captain. You face {DIRS[self.facing]}; the harbour lies {DIRS[self.want]}. Turn with \\boxed{{left}}, \\boxed{{right}} or \\boxed{{around}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice not in TURNS:
            return self.say("Say left, right or around.")
        now = (self.facing + TURNS[choice]) % 4
        if now == self.want:
            return self.say("Harbour ahead!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"You end up facing {DIRS[now]}.", 0.4 if (now - self.want) % 2 else 0.0, True)
        return self.say("Wrong way. Think clockwise.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [next(t for t, k in TURNS.items() if (self.facing + k) % 4 == self.want)]

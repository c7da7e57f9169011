SKILL = "Spatial Reasoning"
HINT = "The observation names the direction of the exit; move exactly that way."
DESCRIPTION = "Take one step toward the exit in a small room."

OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}


class ExitStep(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.exit = self.rng.choice(sorted(OPPOSITE))
        return (f"You stand in a small room. The exit is one step to the {self.exit}. Move with "
                "\\boxed{north}, \\boxed{south}, \\boxed{east} or \\boxed{west}."), {}

    def step(self, action):
        self.turn += 1
        move = (self.parse_action(action) or "").strip().lower()
        if move == self.exit:
            return "You are out!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "You are still inside.", 0.0, True, False, {}
        if move in OPPOSITE:
            return f"You bump into the {move} wall. The exit is to the {self.exit}.", 0.0, False, False, {}
        return "Move north, south, east or west.", 0.0, False, False, {}

    def solution(self):
        return [self.exit]

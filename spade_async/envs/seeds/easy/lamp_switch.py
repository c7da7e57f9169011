SKILL = "Causal Inference"
HINT = "Only one switch is wired to the lamp. If a switch fails, it is not that one: try another."
DESCRIPTION = "Find which of three switches turns the lamp on."


class LampSwitch(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.wired = self.rng.choice(["A", "B", "C"])
        self.tried = []
        return "Three switches: A, B and C. One turns on the lamp. Flip one with \\boxed{A}, \\boxed{B} or \\boxed{C}.", {}

    def step(self, action):
        self.turn += 1
        switch = (self.parse_action(action) or "").strip().upper()
        if switch not in ("A", "B", "C"):
            return "Flip A, B or C.", 0.0, False, self.turn >= self.max_turns, {}
        if switch == self.wired:
            return "The lamp is on!", 1.0 if not self.tried else 0.5, True, False, {}
        self.tried.append(switch)
        if self.turn >= self.max_turns:
            return f"The lamp stays dark. It was {self.wired}.", 0.0, True, False, {}
        return f"Switch {switch} does nothing. Tried so far: {', '.join(self.tried)}.", 0.0, False, False, {}

    def solution(self):
        return [self.wired]

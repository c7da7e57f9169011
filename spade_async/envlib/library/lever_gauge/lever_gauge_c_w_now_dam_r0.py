SKILL = "Causal Inference"
HINT = "Pull each gate once to learn how much it moves the water level, then combine pulls to land on the target."
DESCRIPTION = "Gates move a water level by hidden amounts; reach the target reading."


class DamGates(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.effect = dict(zip("ABC", self.rng.sample([-3, -2, -1, 1, 2, 3, 4], 3)))
        self.value = self.rng.randint(10, 20)
        self.plan = [self.rng.choice("ABC") for _ in range(3)]
        self.target = self.value + sum(self.effect[p] for p in self.plan)
        while self.target == self.value:
            self.plan.append("A")
            self.target += self.effect["A"]
        return f"A dam has gates A, B and C. The water level reads {self.value}; the target is {self.target}. Pull with \\boxed{{A}}, \\boxed{{B}} or \\boxed{{C}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        lever = choice.upper()
        if lever not in self.effect:
            return "Pull A, B or C.", 0.0, False, self.turn >= self.max_turns, {}
        self.value += self.effect[lever]
        if self.value == self.target:
            return "Water level perfect!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The water level stopped at {self.value}.", 0.0, True, False, {}
        return f"The water level now reads {self.value}.", 0.0, False, False, {}

    def solution(self):
        return list(self.plan)

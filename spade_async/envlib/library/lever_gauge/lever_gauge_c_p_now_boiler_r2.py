SKILL = "Causal Inference"
HINT = "Pull each valve once to learn how much it moves the pressure gauge, then combine pulls to land on the target."
DESCRIPTION = "Valves move a pressure gauge by hidden amounts; reach the target reading."


class BoilerValves(GameEnv):
    max_turns = 9

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.effect = dict(zip("ABC", self.rng.sample([-3, -2, -1, 1, 2, 3, 4], 3)))
        self.value = self.rng.randint(10, 20)
        self.plan = [self.rng.choice("ABC") for _ in range(3)]
        self.target = self.value + sum(self.effect[p] for p in self.plan)
        while self.target == self.value:
            self.plan.append("A")
            self.target += self.effect["A"]
        return f"A boiler has three valves A, B and C. The pressure gauge reads {self.value}; the target is {self.target}. Pull with \\boxed{{A}}, \\boxed{{B}} or \\boxed{{C}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        lever = choice.upper()
        if lever not in self.effect:
            return self.reply("Pull A, B or C.")
        self.value += self.effect[lever]
        if self.value == self.target:
            return self.finish("Pressure on target!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The pressure gauge stopped at {self.value}.", round(max(0.0, 0.9 - 0.15 * abs(self.target - self.value)), 2))
        return self.reply(f"The pressure gauge now reads {self.value}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return list(self.plan)

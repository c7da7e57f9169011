SKILL = "Causal Inference"
HINT = "Pull each button once to learn how much it moves the frequency, then combine pulls to land on the target."
DESCRIPTION = "Buttons move a frequency by hidden amounts; reach the target reading."


class RadioDial(GameEnv):
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
        return f"An old radio has buttons A, B and C. The frequency reads {self.value}; the target is {self.target}. Pull with \\boxed{{A}}, \\boxed{{B}} or \\boxed{{C}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        lever = choice.upper()
        if lever not in self.effect:
            return self.reply("Pull A, B or C.")
        self.value += self.effect[lever]
        if self.value == self.target:
            return self.finish("Station found!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The frequency stopped at {self.value}.", round(max(0.0, 0.9 - 0.15 * abs(self.target - self.value)), 2))
        return self.reply(f"{lever} moved it by {self.effect[lever]:+d}; it reads {self.value}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return list(self.plan)

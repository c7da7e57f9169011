SKILL = "Optimization"
HINT = "Go through the hours from the earliest; the first hour nobody lists as busy is the answer."
DESCRIPTION = "Find the earliest hour when all three band members are free."


class BandPractice(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.first = self.rng.randint(10, 15)
        self.busy = {n: sorted(self.rng.sample(range(9, self.first), min(3, self.first - 9))) for n in ["drums", "bass", "voice"]}
        for h in range(9, self.first):
            if all(h not in b for b in self.busy.values()):
                self.rng.choice(list(self.busy.values())).append(h)
        text = " ".join(f"{n} is busy at {', '.join(map(str, sorted(b)))}." for n, b in self.busy.items())
        return f"The band needs a practice hour. Hours run from 9 to 17. {text} Answer the earliest hour with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return "Answer with digits only, e.g. \\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}
        guess = int(found.group(1))
        if guess == self.first:
            return "Rock on!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The first free hour was {self.first}.", 0.5 if not any(guess in b for b in self.busy.values()) and guess > self.first else 0.0, True, False, {}
        if any(guess in b for b in self.busy.values()):
            return f"Someone is busy at {guess}.", 0.0, False, False, {}
        return f"Everyone is free at {guess}, but there is an earlier hour.", 0.0, False, False, {}

    def solution(self):
        return [str(self.first)]

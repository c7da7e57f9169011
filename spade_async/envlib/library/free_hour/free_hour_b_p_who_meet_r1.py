SKILL = "Optimization"
HINT = "Go through the hours from the earliest; the first hour nobody lists as busy is the answer."
DESCRIPTION = "Find the earliest hour when all three colleagues are free."


class MeetingSlot(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.first = self.rng.randint(10, 15)
        self.busy = {n: sorted(self.rng.sample(range(9, self.first), min(3, self.first - 9))) for n in ["Ann", "Raj", "Liu"]}
        for h in range(9, self.first):
            if all(h not in b for b in self.busy.values()):
                self.rng.choice(list(self.busy.values())).append(h)
        text = " ".join(f"{n} is busy at {', '.join(map(str, sorted(b)))}." for n, b in self.busy.items())
        return f"Plan a meeting. Hours run from 9 to 17. {text} Answer the earliest hour with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.say("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.first:
            return self.say("Meeting booked!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The first free hour was {self.first}.", 0.5 if not any(guess in b for b in self.busy.values()) and guess > self.first else 0.0, True)
        if any(guess in b for b in self.busy.values()):
            return self.say(f"Someone is busy at {guess}.")
        return self.say(f"Everyone is free at {guess}, but there is an earlier hour.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.first)]

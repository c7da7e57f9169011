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
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.first:
            return self.finish("Meeting booked!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The first free hour was {self.first}.", 0.0)
        if any(guess in b for b in self.busy.values()):
            return self.reply(f"Someone is busy at {guess}.")
        return self.reply(f"Everyone is free at {guess}, but there is an earlier hour.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.first)]

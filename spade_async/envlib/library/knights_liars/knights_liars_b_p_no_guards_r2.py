SKILL = "Logical Deduction"
HINT = "Try every way to mark each guard honest or lying; keep the one where honest ones speak true and liars speak false."
DESCRIPTION = "Three guards: truthful guards always tell the truth, the others always lie. Name the truthful guards."

SAYS = ["{} is truthful.", "{} is a liar.", "{} and I are both truthful guards.", "at least one of {} and me is a liar."]


class GateGuards(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            says = [(self.rng.choice([j for j in range(3) if j != i]), self.rng.randrange(4)) for i in range(3)]
            worlds = [w for w in itertools.product([True, False], repeat=3) if all(w[i] == [w[j], not w[j], w[i] and w[j], not (w[i] and w[j])][k] for i, (j, k) in enumerate(says))]
            if len(worlds) == 1:
                break
        self.answer = " ".join(n for n, ok in zip("ABC", worlds[0]) if ok) or "none"
        lines = " ".join(f"{n} says: " + SAYS[k].format("ABC"[j]) for n, (j, k) in zip("ABC", says))
        return f"Three guards A, B and C stand at the gate. {lines} Who are the truthful guards? Answer like \\boxed{{A C}}, or \\boxed{{none}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if " ".join(sorted(choice.upper().split())) == self.answer.upper():
            return self.finish("The gate opens.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The truthful guards: {self.answer}.", 0.1)
        return self.reply("That set does not fit the statements.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.answer]

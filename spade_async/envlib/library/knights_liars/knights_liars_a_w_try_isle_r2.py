SKILL = "Logical Deduction"
HINT = "Try every way to mark each islander honest or lying; keep the one where honest ones speak true and liars speak false."
DESCRIPTION = "Three islanders: knights always tell the truth, knaves always lie. Name the knights."

SAYS = ["{} is a knight.", "{} is a knave.", "{} and I are both knights.", "at least one of {} and me is a knave."]


class KnightIsle(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            says = [(self.rng.choice([j for j in range(3) if j != i]), self.rng.randrange(4)) for i in range(3)]
            worlds = [w for w in itertools.product([True, False], repeat=3) if all(w[i] == [w[j], not w[j], w[i] and w[j], not (w[i] and w[j])][k] for i, (j, k) in enumerate(says))]
            if len(worlds) == 1:
                break
        self.answer = " ".join(n for n, ok in zip("ABC", worlds[0]) if ok) or "none"
        lines = " ".join(f"{n} says: " + SAYS[k].format("ABC"[j]) for n, (j, k) in zip("ABC", says))
        return f"On the island of knights and knaves you meet A, B and C. {lines} Who are the knights? Answer like \\boxed{{A C}}, or \\boxed{{none}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if " ".join(sorted(choice.upper().split())) == self.answer.upper():
            return self.finish("The knights salute you!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"The knights: {self.answer}.", 0.0)
        return self.reply("Wrong. Check each statement under your answer.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.answer]

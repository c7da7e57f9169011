SKILL = "Logical Deduction"
HINT = "Try every way to mark each robot honest or lying; keep the one where honest ones speak true and liars speak false."
DESCRIPTION = "Three robots: working robots always tell the truth, broken ones always lie. Name the working robots."

SAYS = ["{} is working.", "{} is broken.", "{} and I are both working robots.", "at least one of {} and me is broken."]


class RobotTalk(GameEnv):
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
        return f"Robots A, B and C report on each other. {lines} Who are the working robots? Answer like \\boxed{{A C}}, or \\boxed{{none}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if " ".join(sorted(choice.upper().split())) == self.answer.upper():
            return self.say("Diagnosis correct!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The working robots: {self.answer}.", 0.1, True)
        return self.say("Wrong. Check each statement under your answer.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.answer]

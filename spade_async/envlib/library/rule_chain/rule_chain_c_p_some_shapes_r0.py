SKILL = "Logical Deduction"
HINT = "Follow the 'every X is a Y' rules like arrows; only the shape whose chain reaches the goal group must belong to it."
DESCRIPTION = "From rules of the form 'every A is a B', find which shape must be a member of a group."

WORDS = ["ket", "mav", "dross", "plim", "sorn", "tib", "quon"]


class ShapeClub(GameEnv):
    max_turns = 1

    def reset(self, seed=None):
        self.seed_rng(seed)
        a, b, c, d, e = self.rng.sample(WORDS, 5)
        self.answer = a
        rules = [f"Every {a} is a {b}.", f"Every {b} is a {c}.", f"Every {c} is a {d}.", f"Some {e} are {d}s."]
        self.rng.shuffle(rules)
        self.goal = d
        return f"In a land of odd shapes: {' '.join(rules)} Which must be a {d}: {a} or {e}? Answer with \\boxed{{word}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.answer:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Only every {self.answer} must be a {self.goal}.", 0.1, True, False, {}
        return "'Some' does not mean 'every'. Try again.", 0.0, False, False, {}

    def solution(self):
        return [self.answer]

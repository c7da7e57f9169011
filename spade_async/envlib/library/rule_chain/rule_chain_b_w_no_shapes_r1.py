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
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.answer:
            return self.say("Right, the chain proves it.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Only every {self.answer} must be a {self.goal}.", 0.0, True)
        return self.say("No: nothing forces that one.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.answer]

SKILL = "Logical Deduction"
HINT = "Follow the 'every X is a Y' rules like arrows; only the creature whose chain reaches the goal group must belong to it."
DESCRIPTION = "From rules of the form 'every A is a B', find which creature must be a member of a group."

WORDS = ["bloop", "razzie", "lazzie", "fleep", "gorp", "wug", "zib"]


class BloopChain(GameEnv):
    max_turns = 1

    def reset(self, seed=None):
        self.seed_rng(seed)
        a, b, c, d, e = self.rng.sample(WORDS, 5)
        self.answer = a
        rules = [f"Every {a} is a {b}.", f"Every {b} is a {c}.", f"Every {c} is a {d}.", f"Some {e} are {d}s."]
        self.rng.shuffle(rules)
        self.goal = d
        return f"Strange creatures follow rules. {' '.join(rules)} Which must be a {d}: {a} or {e}? Answer with \\boxed{{word}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.answer:
            return self.finish("Right, the chain proves it.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Only every {self.answer} must be a {self.goal}.", 0.0)
        return self.reply("No: nothing forces that one.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.answer]

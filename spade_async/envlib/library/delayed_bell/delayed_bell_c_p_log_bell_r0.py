SKILL = "Causal Inference"
HINT = "The effect shows one turn late: the bell rings after the press before the last one; match it to that button."
DESCRIPTION = "A bell reacts one turn late; find the button that causes it."

BUTTONS = ["red", "blue", "green", "gray"]


class LateBell(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(BUTTONS)
        self.last = None
        return f"A bell rings one turn late. Buttons: {', '.join(BUTTONS)}. Each result shows one turn late. \\boxed{{press X}} or \\boxed{{answer X}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return "Cause identified.", 1.0, True, False, {}
        if self.turn >= self.max_turns or verb == "answer":
            return f"It was {self.cause}.", 0.1, True, False, {}
        if verb != "press" or name not in BUTTONS:
            return "Use press X or answer X.", 0.0, False, False, {}
        rang, self.last = self.last == self.cause, name
        return f"Pressed {name}. Effect of the previous press: {'yes' if rang else 'no'}.", 0.0, False, False, {}

    def solution(self):
        return [f"answer {self.cause}"]

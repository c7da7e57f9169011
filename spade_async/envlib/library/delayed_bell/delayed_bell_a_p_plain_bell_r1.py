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
        choice = (self.parse_action(action) or "").strip().lower()
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return self.say("You found the cause!", 1.0, True)
        if self.turn >= self.max_turns or verb == "answer":
            return self.say(f"It was {self.cause}.", 0.1, True)
        if verb != "press" or name not in BUTTONS:
            return self.say("Use press X or answer X.")
        rang, self.last = self.last == self.cause, name
        return self.say(f"You press {name}. The bell {'rings' if rang else 'is quiet'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"answer {self.cause}"]

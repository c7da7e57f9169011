SKILL = "Causal Inference"
HINT = "The effect shows one turn late: the dog barks after the press before the last one; match it to that whistle."
DESCRIPTION = "A dog reacts one turn late; find the whistle that causes it."

BUTTONS = ["high", "low", "short", "long"]


class SlowDog(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(BUTTONS)
        self.last = None
        return f"A sleepy dog reacts late. Whistles: {', '.join(BUTTONS)}. Each result shows one turn late. \\boxed{{press X}} or \\boxed{{answer X}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return self.finish("Cause identified.", 1.0)
        if self.turn >= self.max_turns or verb == "answer":
            return self.finish(f"It was {self.cause}.", 0.0)
        if verb != "press" or name not in BUTTONS:
            return self.reply("Use press X or answer X.")
        rang, self.last = self.last == self.cause, name
        return self.reply(f"Pressed {name}. Effect of the previous press: {'yes' if rang else 'no'}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"answer {self.cause}"]

SKILL = "Causal Inference"
HINT = "The effect shows one turn late: the dog barks after the press before the last one; match it to that whistle."
DESCRIPTION = "A dog reacts one turn late; find the whistle that causes it."

BUTTONS = ["high", "low", "short", "long"]


class SlowDog(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(BUTTONS)
        self.last = None
        return f"A sleepy dog reacts late. Whistles: {', '.join(BUTTONS)}. Each result shows one turn late. \\boxed{{press X}} or \\boxed{{answer X}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return self.say("Cause identified.", 1.0, True)
        if self.turn >= self.max_turns or verb == "answer":
            return self.say(f"It was {self.cause}.", 0.1, True)
        if verb != "press" or name not in BUTTONS:
            return self.say("Use press X or answer X.")
        rang, self.last = self.last == self.cause, name
        return self.say(f"Pressed {name}. Effect of the previous press: {'yes' if rang else 'no'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"answer {self.cause}"]

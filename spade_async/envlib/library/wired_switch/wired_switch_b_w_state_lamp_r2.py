SKILL = "Causal Inference"
HINT = "Flip one switch at a time and watch the lamp; the switch that changes it is the cause. Then answer it."
DESCRIPTION = "Test switches to find the one that controls the lamp, then name it."

NAMES = ["a", "b", "c", "d"]


class LampWiring(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(NAMES)
        self.lit = False
        return f"A dark room. Switches: {', '.join(NAMES)}. Use \\boxed{{flip X}} to test, \\boxed{{answer X}} to decide.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return self.finish("Right, that switch powers the lamp!", 1.0)
        if self.turn >= self.max_turns or verb == "answer":
            return self.finish(f"It was {self.cause}.", 0.0)
        if verb == "flip" and name in NAMES:
            self.lit = self.lit != (name == self.cause)
            return self.reply(f"The lamp is now {'on' if self.lit else 'off'}.")
        return self.reply("Use flip X or answer X.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"answer {self.cause}"]

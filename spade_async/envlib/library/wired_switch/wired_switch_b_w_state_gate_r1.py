SKILL = "Causal Inference"
HINT = "Flip one lever at a time and watch the gate; the lever that changes it is the cause. Then answer it."
DESCRIPTION = "Test levers to find the one that controls the gate, then name it."

NAMES = ["left", "middle", "right"]


class GateLever(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(NAMES)
        self.lit = False
        return f"A closed castle gate. Levers: {', '.join(NAMES)}. Use \\boxed{{flip X}} to test, \\boxed{{answer X}} to decide.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return self.say("The gate obeys you!", 1.0, True)
        if self.turn >= self.max_turns or verb == "answer":
            return self.say(f"It was {self.cause}.", 0.0, True)
        if verb == "flip" and name in NAMES:
            self.lit = self.lit != (name == self.cause)
            return self.say(f"The gate is now {'on' if self.lit else 'off'}.")
        return self.say("Use flip X or answer X.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"answer {self.cause}"]

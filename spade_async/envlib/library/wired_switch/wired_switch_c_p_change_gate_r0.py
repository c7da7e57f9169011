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
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return "The gate obeys you!", 1.0, True, False, {}
        if self.turn >= self.max_turns or verb == "answer":
            return f"It was {self.cause}.", 0.1 if verb == 'answer' else 0.0, True, False, {}
        if verb == "flip" and name in NAMES:
            self.lit = self.lit != (name == self.cause)
            return f"{'Something changed' if name == self.cause else 'Nothing changed'} after {name}.", 0.0, False, False, {}
        return "Use flip X or answer X.", 0.0, False, False, {}

    def solution(self):
        return [f"answer {self.cause}"]

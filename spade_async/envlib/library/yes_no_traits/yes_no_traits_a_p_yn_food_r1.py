SKILL = "Logical Deduction"
HINT = "Ask about a trait that splits the remaining foods in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden food by asking yes/no questions about its traits."

TRAITS = {"lemon": ["sour", "fruit"], "cake": ["sweet", "baked"], "bread": ["baked"], "apple": ["sweet", "fruit"], "pickle": ["sour"], "cookie": ["sweet", "baked"], "lime": ["sour", "fruit"], "salt": []}


class MysteryFood(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.food = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"The mystery food is one of: {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.food:
            return self.say("Tasty, you got it!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was the {self.food}.", 0.1, True)
        if verb == "ask":
            return self.say(f"{'Yes' if word in TRAITS[self.food] else 'No'}, {word}.")
        if verb == "guess":
            return self.say(f"Not the {word}.")
        return self.say("Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"guess {self.food}"]

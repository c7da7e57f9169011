SKILL = "Logical Deduction"
HINT = "Ask about a trait that splits the remaining foods in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden food by asking yes/no questions about its traits."

TRAITS = {"lemon": ["sour", "fruit"], "cake": ["sweet", "baked"], "bread": ["baked"], "apple": ["sweet", "fruit"], "pickle": ["sour"], "cookie": ["sweet", "baked"], "lime": ["sour", "fruit"], "salt": []}


class MysteryFood(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.food = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"The mystery food is one of: {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.food:
            return self.finish("Tasty, you got it!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was the {self.food}.", 0.0)
        if verb == "ask":
            return self.reply(f"The food {'is' if word in TRAITS[self.food] else 'is not'} {word}.")
        if verb == "guess":
            return self.reply(f"Not the {word}.")
        return self.reply("Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"guess {self.food}"]

SKILL = "Logical Deduction"
HINT = "Ask about a trait that splits the remaining animals in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden animal by asking yes/no questions about its traits."

TRAITS = {"bat": ["flies", "furry"], "cat": ["furry", "pet"], "duck": ["flies", "swims"], "eel": ["swims"], "hawk": ["flies"], "seal": ["swims", "furry"], "dog": ["pet", "furry"], "goldfish": ["pet", "swims"]}


class ZooAnimal(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.animal = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"A hidden animal is one of: {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.animal:
            return self.finish("Yes, the animal is found!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was the {self.animal}.", 0.0)
        if verb == "ask":
            return self.reply(f"{'Yes' if word in TRAITS[self.animal] else 'No'}, {word}.")
        if verb == "guess":
            return self.reply(f"Not the {word}.")
        return self.reply("Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"guess {self.animal}"]

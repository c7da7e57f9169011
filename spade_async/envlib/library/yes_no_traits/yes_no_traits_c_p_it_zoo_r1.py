SKILL = "Logical Deduction"
HINT = "Ask about a trait that splits the remaining animals in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden animal by asking yes/no questions about its traits."

TRAITS = {"bat": ["flies", "furry"], "cat": ["furry", "pet"], "duck": ["flies", "swims"], "eel": ["swims"], "hawk": ["flies"], "seal": ["swims", "furry"], "dog": ["pet", "furry"], "goldfish": ["pet", "swims"]}


class ZooAnimal(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.animal = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"A hidden animal is one of: {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.animal:
            return self.say("Yes, the animal is found!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was the {self.animal}.", 0.1, True)
        if verb == "ask":
            return self.say(f"The animal {'is' if word in TRAITS[self.animal] else 'is not'} {word}.")
        if verb == "guess":
            return self.say(f"Not the {word}.")
        return self.say("Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"guess {self.animal}"]

SKILL = "Logical Deduction"
HINT = "Ask about a trait that splits the remaining tools in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden tool by asking yes/no questions about its traits."

TRAITS = {"saw": ["sharp", "metal"], "hammer": ["metal", "heavy"], "brush": ["soft"], "axe": ["sharp", "heavy"], "rope": ["soft"], "drill": ["metal", "electric"], "lamp": ["electric"], "knife": ["sharp", "metal"]}


class ToolBox(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.tool = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"The missing tool is one of: {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.tool:
            return self.say("Found the tool!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was the {self.tool}.", 0.1, True)
        if verb == "ask":
            return self.say(f"The tool {'is' if word in TRAITS[self.tool] else 'is not'} {word}.")
        if verb == "guess":
            return self.say(f"Not the {word}.")
        return self.say("Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"guess {self.tool}"]

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
        choice = (self.parse_action(action) or "").strip().lower()
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.tool:
            return "Found the tool!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was the {self.tool}.", 0.1, True, False, {}
        if verb == "ask":
            return f"The tool {'is' if word in TRAITS[self.tool] else 'is not'} {word}.", 0.0, False, False, {}
        if verb == "guess":
            return f"Not the {word}.", 0.0, False, False, {}
        return "Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.", 0.0, False, False, {}

    def solution(self):
        return [f"guess {self.tool}"]

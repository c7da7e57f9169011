SKILL = "Logical Deduction"
HINT = "Ask about a trait that splits the remaining tools in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden tool by asking yes/no questions about its traits."

TRAITS = {"saw": ["sharp", "metal"], "hammer": ["metal", "heavy"], "brush": ["soft"], "axe": ["sharp", "heavy"], "rope": ["soft"], "drill": ["metal", "electric"], "lamp": ["electric"], "knife": ["sharp", "metal"]}


class ToolBox(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.tool = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"The missing tool is one of: {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.tool:
            return self.finish("Found the tool!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was the {self.tool}.", 0.0)
        if verb == "ask":
            return self.reply(f"{'Yes' if word in TRAITS[self.tool] else 'No'}, {word}.")
        if verb == "guess":
            return self.reply(f"Not the {word}.")
        return self.reply("Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"guess {self.tool}"]

SKILL = "Causal Inference"
HINT = "Test half of the suspects at once: a reaction means the culprit is in that half. Then blame it."
DESCRIPTION = "Group tests reveal which plugin causes the crash."

SUSPECTS = ["audio", "video", "chat", "maps", "cloud", "print"]


class CrashPlugin(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.culprit = self.rng.choice(SUSPECTS)
        return f"One plugin crashes the app. One of {', '.join(SUSPECTS)} causes the crash. Test a group with \\boxed{{test A B}}; blame with \\boxed{{blame A}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        words = choice.split()
        if words[:1] == ["blame"] and words[1:] == [self.culprit]:
            return "Found the culprit!", 1.0, True, False, {}
        if self.turn >= self.max_turns or words[:1] == ["blame"]:
            return f"The culprit was {self.culprit}.", 0.0, True, False, {}
        group = [w for w in words[1:] if w in SUSPECTS]
        if words[:1] != ["test"] or not group:
            return "Use test X Y or blame X.", 0.0, False, False, {}
        return f"{'Reaction!' if self.culprit in group else 'No reaction.'}", 0.0, False, False, {}

    def solution(self):
        return [f"blame {self.culprit}"]

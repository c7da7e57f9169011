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
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        words = choice.split()
        if words[:1] == ["blame"] and words[1:] == [self.culprit]:
            return self.say("Correct, that is the cause.", 1.0, True)
        if self.turn >= self.max_turns or words[:1] == ["blame"]:
            return self.say(f"The culprit was {self.culprit}.", 0.0, True)
        group = [w for w in words[1:] if w in SUSPECTS]
        if words[:1] != ["test"] or not group:
            return self.say("Use test X Y or blame X.")
        return self.say(f"Testing {' '.join(group)}: {'the crash appears' if self.culprit in group else 'all clear'}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"blame {self.culprit}"]

SKILL = "Causal Inference"
HINT = "Test half of the suspects at once: a reaction means the culprit is in that half. Then blame it."
DESCRIPTION = "Group tests reveal which spray causes the wilting."

SUSPECTS = ["neem", "soap", "oil", "vinegar", "garlic", "pepper"]


class WiltingPlant(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.culprit = self.rng.choice(SUSPECTS)
        return f"One spray makes plants wilt. One of {', '.join(SUSPECTS)} causes the wilting. Test a group with \\boxed{{test A B}}; blame with \\boxed{{blame A}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        words = choice.split()
        if words[:1] == ["blame"] and words[1:] == [self.culprit]:
            return self.finish("Found the culprit!", 1.0)
        if self.turn >= self.max_turns or words[:1] == ["blame"]:
            return self.finish(f"The culprit was {self.culprit}.", 0.1)
        group = [w for w in words[1:] if w in SUSPECTS]
        if words[:1] != ["test"] or not group:
            return self.reply("Use test X Y or blame X.")
        return self.reply(f"{'Reaction!' if self.culprit in group else 'No reaction.'}")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [f"blame {self.culprit}"]

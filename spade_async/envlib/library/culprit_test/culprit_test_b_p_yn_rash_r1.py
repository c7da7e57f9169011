SKILL = "Causal Inference"
HINT = "Test half of the suspects at once: a reaction means the culprit is in that half. Then blame it."
DESCRIPTION = "Group tests reveal which food causes the rash."

SUSPECTS = ["milk", "nuts", "egg", "wheat", "fish", "soy"]


class RashFood(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.culprit = self.rng.choice(SUSPECTS)
        return f"You get a rash from one food. One of {', '.join(SUSPECTS)} causes the rash. Test a group with \\boxed{{test A B}}; blame with \\boxed{{blame A}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        words = choice.split()
        if words[:1] == ["blame"] and words[1:] == [self.culprit]:
            return self.say("Found the culprit!", 1.0, True)
        if self.turn >= self.max_turns or words[:1] == ["blame"]:
            return self.say(f"The culprit was {self.culprit}.", 0.1, True)
        group = [w for w in words[1:] if w in SUSPECTS]
        if words[:1] != ["test"] or not group:
            return self.say("Use test X Y or blame X.")
        return self.say(f"{'Reaction!' if self.culprit in group else 'No reaction.'}")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [f"blame {self.culprit}"]

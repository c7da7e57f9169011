SKILL = "Logical Deduction"
HINT = "Three words share a category (fruits, animals or colors); answer with the one that does not."
DESCRIPTION = "Find the word that does not belong with the other three."

GROUPS = {
    "fruit": ["apple", "banana", "grape", "pear", "plum", "mango"],
    "animal": ["dog", "cat", "horse", "lion", "mouse", "sheep"],
    "color": ["red", "blue", "green", "yellow", "purple", "white"],
}


class OddWord(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        same, other = self.rng.sample(sorted(GROUPS), 2)
        self.odd = self.rng.choice(GROUPS[other])
        words = [*self.rng.sample(GROUPS[same], 3), self.odd]
        self.rng.shuffle(words)
        return f"Which word does not belong: {', '.join(words)}? Answer with \\boxed{{word}}.", {}

    def step(self, action):
        self.turn += 1
        word = (self.parse_action(action) or "").strip().lower()
        if word == self.odd:
            return "Correct!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"No, it was {self.odd}.", 0.0, True, False, {}
        return "No. Look for the word of a different kind.", 0.0, False, False, {}

    def solution(self):
        return [self.odd]

SKILL = "Pattern Recognition"
HINT = "The tiles repeat in a fixed cycle; take the position modulo the cycle length to find the item."
DESCRIPTION = "A row of tiles repeats a cycle; name the item at a far position."

ITEMS = ["star", "moon", "sun", "cloud", "leaf"]


class TileFloor(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cycle = self.rng.sample(ITEMS, self.rng.randint(3, 4))
        self.where = self.rng.randint(12, 30)
        self.answer = self.cycle[(self.where - 1) % len(self.cycle)]
        row = ", ".join(self.cycle[i % len(self.cycle)] for i in range(2 * len(self.cycle)))
        return f"Floor tiles in a row: {row}, ... What is item number {self.where}? Answer with \\boxed{{item}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.answer:
            return self.say("That tile fits.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"Item {self.where} is {self.answer}.", 0.0, True)
        return self.say(f"Wrong. The cycle is {len(self.cycle)} long.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.answer]

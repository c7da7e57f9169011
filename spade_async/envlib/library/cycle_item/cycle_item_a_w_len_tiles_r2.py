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
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.answer:
            return self.finish("That tile fits.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"Item {self.where} is {self.answer}.", 0.0)
        return self.reply(f"Wrong. The cycle is {len(self.cycle)} long.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.answer]

SKILL = "Mathematical Reasoning"
HINT = "Pick a first digit, then the second digit is the target minus it; check the number is in range and is odd."
DESCRIPTION = "Name a number whose digits add up to a target and which is odd."


class LockDigits(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        pick = self.rng.choice([n for n in range(10, 100) if n % 2 == 1])
        self.target = pick // 10 + pick % 10
        self.options = [n for n in range(10, 100) if n // 10 + n % 10 == self.target and n % 2 == 1]
        return f"A lock wants a special number. Name a two-digit number whose digits add up to {self.target} and which is odd. Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) != 2:
            return "Answer with a two-digit number, like \\boxed{47}.", 0.0, False, self.turn >= self.max_turns, {}
        n = int(text)
        if n in self.options:
            return "Click, the lock opens.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"For example {self.options[0]} works.", 0.0, True, False, {}
        return f"No. The digits of {n} add up to {sum(map(int, text))}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.options[0])]

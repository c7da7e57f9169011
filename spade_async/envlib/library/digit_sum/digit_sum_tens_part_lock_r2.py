SKILL = "Mathematical Reasoning"
HINT = "Pick a first digit, then the second digit is the target minus it; check the number is in range and has a larger tens digit than units digit."
DESCRIPTION = "Name a number whose digits add up to a target and which has a larger tens digit than units digit."


class LockDigits(GameEnv):
    max_turns = 4

    def reset(self, seed=None):
        self.seed_rng(seed)
        pick = self.rng.choice([n for n in range(10, 100) if n // 10 > n % 10])
        self.target = pick // 10 + pick % 10
        self.options = [n for n in range(10, 100) if n // 10 + n % 10 == self.target and n // 10 > n % 10]
        return f"A lock wants a special number. Name a two-digit number whose digits add up to {self.target} and which has a larger tens digit than units digit. Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) != 2:
            return self.reply("Answer with a two-digit number, like \\boxed{47}.")
        n = int(text)
        if n in self.options:
            return self.finish("Click, the lock opens.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"For example {self.options[0]} works.", 0.4 if sum(map(int, text)) == self.target else 0.0)
        return self.reply(f"{n} does not fit both rules.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.options[0])]

SKILL = "Mathematical Reasoning"
HINT = "Pick a first digit, then the second digit is the target minus it; check the number is in range and is even."
DESCRIPTION = "Name a number whose digits add up to a target and which is even."


class DigitRiddle(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        pick = self.rng.choice([n for n in range(10, 100) if n % 2 == 0])
        self.target = pick // 10 + pick % 10
        self.options = [n for n in range(10, 100) if n // 10 + n % 10 == self.target and n % 2 == 0]
        return f"Solve the riddle. Name a two-digit number whose digits add up to {self.target} and which is even. Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) != 2:
            return self.reply("Answer with a two-digit number, like \\boxed{47}.")
        n = int(text)
        if n in self.options:
            return self.finish("Riddle solved!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"For example {self.options[0]} works.", 0.0)
        return self.reply(f"No. The digits of {n} add up to {sum(map(int, text))}.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.options[0])]

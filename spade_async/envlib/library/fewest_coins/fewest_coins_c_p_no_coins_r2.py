SKILL = "Optimization"
HINT = "Greedy is not always best with these coins: try each count of the largest coin and fill the rest."
DESCRIPTION = "How few coins make an exact amount?"


class FewestCoins(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.values = [1, 3, 4]
        self.amount = self.rng.randint(6, 30)
        best = [0] + [99] * self.amount
        for a in range(1, self.amount + 1):
            best[a] = min(best[a - v] + 1 for v in self.values if v <= a)
        self.answer = best[self.amount]
        return f"A strange country's money. Coins come in {', '.join(map(str, self.values))}. What is the fewest coins that make exactly {self.amount}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.reply("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.finish("That is the minimum!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It takes {self.answer}.", 0.3 if guess == self.answer + 1 else 0.0)
        return self.reply(f"{guess} is not the minimum count.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

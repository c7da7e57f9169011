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
        found = re.fullmatch(r"\s*(\d{1,4})\s*", self.parse_action(action) or "")
        if found is None:
            return self.say("Answer with digits only, e.g. \\boxed{7}.")
        guess = int(found.group(1))
        if guess == self.answer:
            return self.say("Optimal!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It takes {self.answer}.", 0.3 if guess == self.answer + 1 else 0.0, True)
        return self.say(f"No, the fewest is {'more' if guess < self.answer else 'less'} than {guess}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Optimization"
HINT = "Greedy is not always best with these stamps: try each count of the largest stamp and fill the rest."
DESCRIPTION = "How few stamps make an exact amount?"


class StampPostage(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.values = [1, 5, 6, 9]
        self.amount = self.rng.randint(6, 30)
        best = [0] + [99] * self.amount
        for a in range(1, self.amount + 1):
            best[a] = min(best[a - v] + 1 for v in self.values if v <= a)
        self.answer = best[self.amount]
        return f"Postage must be exact. Stamps come in {', '.join(map(str, self.values))}. What is the fewest stamps that make exactly {self.amount}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.say("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.say("That is the minimum!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It takes {self.answer}.", 0.0, True)
        return self.say(f"{guess} is not the minimum count.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

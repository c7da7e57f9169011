SKILL = "Optimization"
HINT = "Greedy is not always best with these weights: try each count of the largest weight and fill the rest."
DESCRIPTION = "How few weights make an exact amount?"


class ScaleWeights(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.values = [1, 4, 5]
        self.amount = self.rng.randint(6, 30)
        best = [0] + [99] * self.amount
        for a in range(1, self.amount + 1):
            best[a] = min(best[a - v] + 1 for v in self.values if v <= a)
        self.answer = best[self.amount]
        return f"Balance a scale with weights. Weights come in {', '.join(map(str, self.values))}. What is the fewest weights that make exactly {self.amount}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) > 4:
            return self.reply("Send a whole number, like \\boxed{12}.")
        guess = int(text)
        if guess == self.answer:
            return self.finish("That is the minimum!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It takes {self.answer}.", 0.0)
        return self.reply(f"{guess} is not the minimum count.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [str(self.answer)]

SKILL = "Mathematical Reasoning"
HINT = "Multiply the count by the price, then add the delivery fee."
DESCRIPTION = "Compute a total from a short story; wrong totals get bigger/smaller feedback."


class ShopBill(GameEnv):
    max_turns = 3

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = self.count * self.each + self.extra
        return f"You buy {self.count} books at {self.each} coins each and pay {self.extra} coins for delivery. What is the bill? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        try:
            guess = int((self.parse_action(action) or "").strip())
        except ValueError:
            return self.say("That is not a number. Example: \\boxed{25}.")
        if guess == self.answer:
            return self.say("Paid in full!", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"The total was {self.answer}.", round(max(0.0, 0.9 - abs(guess - self.answer) / 50), 2), True)
        word = "bigger" if guess < self.answer else "smaller"
        return self.say(f"No, the total is {word}.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [str(self.answer)]

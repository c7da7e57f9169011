SKILL = "Mathematical Reasoning"
HINT = (
    "Use binary search: keep the range [lo, hi] that can still hold the secret (start 1-100), "
    "always guess its middle (lo + hi) // 2, and move lo or hi past your guess after each "
    "'higher'/'lower'. Seven guesses always suffice."
)
DESCRIPTION = "Find a secret integer from 1 to 100 with higher/lower feedback in at most 7 guesses."


class NumberGuess(GameEnv):
    max_turns = 10

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.secret = self.rng.randint(1, 100)
        self.guesses = 0
        return (
            "I picked a secret integer from 1 to 100. You have 7 guesses; after a wrong guess "
            "I tell you whether the secret is higher or lower. Act with \\boxed{guess N}."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split())
        m = re.fullmatch(r"guess (\d{1,3})", cmd)
        if not m or not 1 <= int(m.group(1)) <= 100:
            return self._wait("Invalid action. Use \\boxed{guess N} with N from 1 to 100.")
        guess = int(m.group(1))
        self.guesses += 1
        if guess == self.secret:
            return f"Correct, the secret is {guess}!", 1.0, True, False, {}
        if self.guesses >= 7:
            partial = round(0.5 * max(0.0, 1 - abs(guess - self.secret) / 25), 3)
            return f"Out of guesses. The secret was {self.secret}.", partial, True, False, {}
        direction = "higher" if self.secret > guess else "lower"
        return self._wait(f"Wrong: the secret is {direction} than {guess}. "
                          f"Guesses left: {7 - self.guesses}.")

    def solution(self):
        return [f"guess {self.secret}"]

SKILL = "Logical Deduction"
HINT = (
    "First guess 111, 222, 333 and 444: the exact count of each tells how many times that digit "
    "appears (digit 5 fills the rest). Then order the known digits: each later guess should agree "
    "with all feedback so far."
)
DESCRIPTION = "Crack a hidden 3-digit code (digits 1-5) from exact/misplaced feedback in 8 guesses."


class Mastermind(GameEnv):
    max_turns = 10

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.code = "".join(self.rng.choice("12345") for _ in range(3))
        self.guesses = 0
        return (
            "Crack a secret 3-digit code; each digit is 1-5 and digits may repeat. After each guess "
            "I say how many digits are exact (right digit, right place) and how many are misplaced. "
            "You have 8 guesses. Act with \\boxed{guess DDD}, e.g. \\boxed{guess 123}."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split())
        m = re.fullmatch(r"guess ([1-5]{3})", cmd)
        if not m:
            return self._wait("Invalid action. Use \\boxed{guess DDD} with three digits from 1 to 5.")
        guess = m.group(1)
        self.guesses += 1
        exact = sum(g == c for g, c in zip(guess, self.code))
        common = sum((collections.Counter(guess) & collections.Counter(self.code)).values())
        if exact == 3:
            return "Code cracked!", 1.0, True, False, {}
        if self.guesses >= 8:
            return f"Out of guesses. The code was {self.code}.", round(exact / 6, 3), True, False, {}
        return self._wait(f"{guess}: {exact} exact, {common - exact} misplaced. "
                          f"Guesses left: {8 - self.guesses}.")

    def solution(self):
        return [f"guess {self.code}"]

SKILL = "Mathematical Reasoning"
HINT = (
    "Evaluate at x = 0, 1 and -1. Then c = f(0), b = (f(1) - f(-1)) / 2 and "
    "a = (f(1) + f(-1)) / 2 - c. Three evaluations and one answer win."
)
DESCRIPTION = "Identify the integer coefficients of a hidden quadratic by evaluating it at chosen points."


class HiddenPolynomial(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.coef = [self.rng.randint(-5, 5) for _ in range(3)]
        return (
            "A hidden polynomial f(x) = a*x^2 + b*x + c has integer coefficients from -5 to 5. "
            "Commands: \\boxed{eval X} returns f(X) for an integer X from -10 to 10; "
            "\\boxed{answer A B C} submits the coefficients and ends the game. "
            f"You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split())
        a, b, c = self.coef
        m = re.fullmatch(r"eval (-?\d{1,2})", cmd)
        if m and -10 <= int(m.group(1)) <= 10:
            x = int(m.group(1))
            return self._wait(f"f({x}) = {a * x * x + b * x + c}")
        m = re.fullmatch(r"answer (-?\d{1,2}) (-?\d{1,2}) (-?\d{1,2})", cmd)
        if m:
            right = sum(int(g) == t for g, t in zip(m.groups(), self.coef))
            if right == 3:
                return "Correct polynomial!", 1.0, True, False, {}
            return f"Wrong. It was a={a}, b={b}, c={c}.", round(right / 4, 3), True, False, {}
        return self._wait("Invalid action. Use \\boxed{eval X} (-10..10) or \\boxed{answer A B C}.")

    def solution(self):
        return ["answer {} {} {}".format(*self.coef)]

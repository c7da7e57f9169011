"""Benign fixture: guess a number; uses the injected GameEnv and rng."""
# ruff: noqa: F821 - GameEnv and parse_boxed are injected by the sandbox


class GuessNumber(GameEnv):
    max_turns = 6

    def _reset(self):
        self.target = self.rng.randint(1, 9)
        self.low, self.high = 1, 9
        return f"Guess a number from {self.low} to {self.high}. Answer with \\boxed{{n}}.", {"low": 1, "high": 9}

    def _step(self, action):
        cmd = self.parse_action(action)
        truncated = self.turn >= self.max_turns
        if cmd is None or not cmd.strip().lstrip("-").isdigit():
            return "Please answer with a number in \\boxed{}.", 0.0, False, truncated, {}
        guess = int(cmd)
        if guess == self.target:
            return "Correct!", 1.0, True, False, {"turns": self.turn}
        hint = "higher" if guess < self.target else "lower"
        return f"Wrong, go {hint}.", 0.0, False, truncated, {}

    def solution(self):
        return [f"\\boxed{{{self.target}}}"]

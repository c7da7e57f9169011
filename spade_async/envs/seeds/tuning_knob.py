SKILL = "Optimization"
HINT = (
    "The yield is an exact downward parabola in the knob position. Test 0, 15 and 30, getting "
    "y0, y15, y30; the peak is at p = 15 + 7.5 * (y30 - y0) / (2 * y15 - y0 - y30). "
    "Round p to the nearest integer and set it."
)
DESCRIPTION = "Find the knob setting 0-30 that maximises a hidden quadratic yield with few tests."


class TuningKnob(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.peak = self.rng.randint(2, 28)
        self.height = self.rng.randint(200, 900)
        self.curve = self.rng.randint(1, 3)
        return (
            "A machine has a knob with integer positions 0-30 and a hidden best position. "
            "Commands: \\boxed{test X} runs the machine at position X and reports its yield; "
            "\\boxed{set X} fixes the knob at X and ends the game; only the best position wins. "
            f"You have {self.max_turns} turns."
        ), {}

    def _yield(self, x):
        return self.height - self.curve * (x - self.peak) ** 2

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split())
        m = re.fullmatch(r"(test|set) (\d{1,2})", cmd)
        if not m or int(m.group(2)) > 30:
            return self._wait("Invalid action. Use \\boxed{test X} or \\boxed{set X} with X from 0 to 30.")
        x = int(m.group(2))
        if m.group(1) == "test":
            return self._wait(f"Yield at {x}: {self._yield(x)}.")
        if x == self.peak:
            return f"Perfect: yield {self.height} is the best possible.", 1.0, True, False, {}
        score = round(0.5 * max(0.0, 1 - abs(x - self.peak) / 10), 3)
        return f"Yield {self._yield(x)}; the best was {self.height} at {self.peak}.", score, True, False, {}

    def solution(self):
        return [f"set {self.peak}"]

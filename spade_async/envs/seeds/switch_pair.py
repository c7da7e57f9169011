SKILL = "Causal Inference"
HINT = (
    "Turn switches on one at a time (1, 2, 3, ...) until the lamp lights: the last switch you "
    "turned on is one cause. Then turn the earlier switches off one at a time; the one that "
    "turns the lamp off is the other cause."
)
DESCRIPTION = "Find which two of five switches jointly turn on a lamp (lamp = both on)."


class SwitchPair(GameEnv):
    max_turns = 12

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.causes = sorted(self.rng.sample(range(1, 6), 2))
        self.on = set()
        return (
            "Five switches (1-5) are all off and a lamp is off. The lamp is on exactly when two "
            "particular switches are both on; the other three do nothing. Commands: "
            "\\boxed{toggle I} flips switch I; \\boxed{answer I J} names the two causes and ends "
            f"the game. You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().replace(",", " ").split())
        m = re.fullmatch(r"toggle ([1-5])", cmd)
        if m:
            self.on ^= {int(m.group(1))}
            lamp = "ON" if set(self.causes) <= self.on else "off"
            return self._wait(f"Switches on: {sorted(self.on)}. The lamp is {lamp}.")
        m = re.fullmatch(r"answer ([1-5]) ([1-5])", cmd)
        if not m:
            return self._wait("Invalid action. Use \\boxed{toggle I} or \\boxed{answer I J} with I, J in 1-5.")
        named = {int(m.group(1)), int(m.group(2))}
        right = len(named & set(self.causes))
        if right == 2:
            return "Correct, those two switches control the lamp!", 1.0, True, False, {}
        return f"Wrong. The causes were {self.causes}.", 0.2 * right, True, False, {}

    def solution(self):
        return ["answer {} {}".format(*self.causes)]

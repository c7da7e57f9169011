SKILL = "Logical Deduction"
HINT = (
    "Two of the five guards lie, each always naming the same wrong door. Ask guards one by one "
    "until three of them name the same door: three agreeing guards cannot all be liars, so that "
    "door is right. Never open a door named by only one or two guards."
)
DESCRIPTION = "Find the treasure door among 6 by questioning 5 guards, two of whom always lie."


class LiarGuards(GameEnv):
    max_turns = 8

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.door = self.rng.randint(1, 6)
        liars = self.rng.sample("ABCDE", 2)
        wrong = [d for d in range(1, 7) if d != self.door]
        self.claims = {g: self.rng.choice(wrong) if g in liars else self.door for g in "ABCDE"}
        return (
            "A treasure is behind one of doors 1-6. Guards A, B, C, D and E each know where; two of "
            "them always lie. Commands: \\boxed{ask G} (G is A-E) hears guard G's claim; "
            "\\boxed{open N} opens door N and ends the game. "
            f"You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").upper().split())
        m = re.fullmatch(r"ASK ([A-E])", cmd)
        if m:
            guard = m.group(1)
            return self._wait(f"Guard {guard} says: the treasure is behind door {self.claims[guard]}.")
        m = re.fullmatch(r"OPEN ([1-6])", cmd)
        if m:
            if int(m.group(1)) == self.door:
                return "You found the treasure!", 1.0, True, False, {}
            return f"Empty. The treasure was behind door {self.door}.", 0.0, True, False, {}
        return self._wait("Invalid action. Use \\boxed{ask G} with G in A-E or \\boxed{open N} with N in 1-6.")

    def solution(self):
        return [f"open {self.door}"]

SKILL = "Pattern Recognition"
HINT = (
    "The rule is one of: add a constant, multiply by 2 or 3, n*n plus a constant, or add the "
    "previous two terms. Reveal terms 3 and 4 with \\boxed{next}, keep the rule that fits all "
    "four terms, then extend it to term 8."
)
DESCRIPTION = "Reveal terms of a hidden integer sequence one by one and predict its 8th term."


class SequenceRule(GameEnv):
    max_turns = 6

    def reset(self, seed=None):
        self.seed_rng(seed)
        kind, a, b = self.rng.choice("agsf"), self.rng.randint(1, 9), self.rng.randint(1, 9)
        if kind == "a":
            self.terms = [a + b * i for i in range(8)]
        elif kind == "g":
            ratio = self.rng.choice([2, 3])
            self.terms = [a * ratio**i for i in range(8)]
        elif kind == "s":
            self.terms = [(i + 1) ** 2 + a for i in range(8)]
        else:
            self.terms = [a, b]
            while len(self.terms) < 8:
                self.terms.append(self.terms[-1] + self.terms[-2])
        self.shown = 2
        return (
            f"A hidden rule makes an integer sequence. Terms 1-2: {self.terms[:2]}. Commands: "
            "\\boxed{next} reveals the next term (up to term 6); \\boxed{answer N} submits your "
            f"value for term 8 and ends the game. You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split())
        if cmd == "next":
            if self.shown >= 6:
                return self._wait("No more terms can be revealed. Use \\boxed{answer N}.")
            self.shown += 1
            return self._wait(f"Terms 1-{self.shown}: {self.terms[:self.shown]}.")
        m = re.fullmatch(r"answer (-?\d{1,9})", cmd)
        if not m:
            return self._wait("Invalid action. Use \\boxed{next} or \\boxed{answer N}.")
        target = self.terms[7]
        if int(m.group(1)) == target:
            return "Correct!", 1.0, True, False, {}
        partial = round(0.5 * max(0.0, 1 - abs(int(m.group(1)) - target) / target), 3)
        return f"Wrong. Term 8 was {target}.", partial, True, False, {}

    def solution(self):
        return [f"answer {self.terms[7]}"]

SKILL = "Causal Inference"
HINT = (
    "Push each domino once and count how many fall: a domino that topples all five is first in "
    "the chain, one that topples only itself is last. Sort by that count (largest first); four "
    "pushes are enough because the fifth position is what is left."
)
DESCRIPTION = "Recover the hidden order of a domino chain by pushing single dominoes."


class DominoOrder(GameEnv):
    max_turns = 7

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.chain = "".join(self.rng.sample("ABCDE", 5))
        return (
            "Five dominoes A-E stand in a hidden chain order. A pushed domino topples itself and "
            "every domino after it in the chain; all are set up again afterwards. Commands: "
            "\\boxed{push X} pushes domino X; \\boxed{answer ABCDE} gives the chain from first to "
            f"last and ends the game. You have {self.max_turns} turns."
        ), {}

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").upper().split())
        m = re.fullmatch(r"PUSH ([A-E])", cmd)
        if m:
            fallen = sorted(self.chain[self.chain.index(m.group(1)):])
            return self._wait(f"Pushing {m.group(1)} topples {len(fallen)}: {', '.join(fallen)}.")
        m = re.fullmatch(r"ANSWER ([A-E]{5})", cmd)
        if not m:
            return self._wait("Invalid action. Use \\boxed{push X} (X in A-E) or \\boxed{answer ABCDE}.")
        if m.group(1) == self.chain:
            return "Correct chain order!", 1.0, True, False, {}
        right = sum(a == b for a, b in zip(m.group(1), self.chain))
        return f"Wrong. The chain was {self.chain}.", round(0.15 * right, 3), True, False, {}

    def solution(self):
        return [f"answer {self.chain}"]

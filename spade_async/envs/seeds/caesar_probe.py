SKILL = "Pattern Recognition"
HINT = (
    "Encode the single letter a: the letter you get back reveals the shift (a -> d means shift 3). "
    "Then move every letter of the secret back by that shift, wrapping from a to z."
)
DESCRIPTION = "Decode a secret word hidden by an unknown Caesar shift, using an encoding oracle."
WORDS = ["planet", "garden", "silver", "rocket", "winter", "castle", "bridge", "forest", "candle", "monkey"]


class CaesarProbe(GameEnv):
    max_turns = 5

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.shift = self.rng.randint(1, 25)
        self.word = self.rng.choice(WORDS)
        return (
            f"The secret word was encrypted with a hidden Caesar shift: '{self._encode(self.word)}'. "
            "Commands: \\boxed{encode TEXT} shows how lowercase TEXT is encrypted; "
            "\\boxed{answer WORD} submits the decrypted word and ends the game. "
            f"You have {self.max_turns} turns."
        ), {}

    def _encode(self, text):
        return "".join(chr((ord(ch) - 97 + self.shift) % 26 + 97) for ch in text)

    def _wait(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def step(self, action):
        self.turn += 1
        cmd = " ".join((self.parse_action(action) or "").lower().split())
        m = re.fullmatch(r"(encode|answer) ([a-z]{1,12})", cmd)
        if not m:
            return self._wait("Invalid action. Use \\boxed{encode TEXT} or \\boxed{answer WORD} (letters a-z).")
        if m.group(1) == "encode":
            return self._wait(f"'{m.group(2)}' encrypts to '{self._encode(m.group(2))}'.")
        if m.group(2) == self.word:
            return "Correct, you decoded the word!", 1.0, True, False, {}
        same = sum(a == b for a, b in zip(m.group(2), self.word))
        partial = round(0.5 * same / len(self.word), 3)
        return f"Wrong. The word was '{self.word}'.", partial, True, False, {}

    def solution(self):
        return [f"answer {self.word}"]

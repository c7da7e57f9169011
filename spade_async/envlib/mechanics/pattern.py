"""Pattern Recognition families: a rule behind a sequence, continued or filled in."""

from __future__ import annotations

from spade_async.envlib.mechanics import NUMBER_PARSE, PATTERN, WORD_PARSE, Family

GEOMETRIC = r"""
SKILL = "$skill"
HINT = "Each term is the previous one times the same factor; multiply the last term by it."
DESCRIPTION = "Continue a sequence that $grows by a constant factor."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        first, self.factor = self.rng.randint(1, 5), self.rng.choice($factors)
        self.terms = [first * self.factor**i for i in range(4)]
        self.answer = self.terms[-1] * self.factor
        return f"$intro {', '.join(map(str, self.terms))}, ... What comes next? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Next was {self.answer}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]
"""

ALTERNATING = r"""
SKILL = "$skill"
HINT = "Two rules take turns: look at the odd positions and the even positions separately."
DESCRIPTION = "Continue a sequence made of two $kind that alternate."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        up, down = self.rng.randint(3, 9), self.rng.randint(1, 2)
        value, self.seq = self.rng.randint(1, 10), []
        for i in range(7):
            self.seq.append(value)
            value += up if i % 2 == 0 else -down
        self.answer = value
        shown = " $sep ".join(str(v) for v in self.seq)
        return f"$intro {shown} $sep ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The rule gives {self.answer}.", $lose, True, False, {}
        return "$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]
"""

LETTER_STEP = r"""
SKILL = "$skill"
HINT = "Count how many letters each step skips in the alphabet and skip the same again."
DESCRIPTION = "Continue a sequence of letters that moves through the alphabet in equal jumps."

ABC = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.jump = self.rng.randint(1, $jump)
        start = self.rng.randint(0, 25 - 4 * self.jump)
        self.letters = [ABC[start + i * self.jump] for i in range(4)]
        self.answer = ABC[start + 4 * self.jump] if start + 4 * self.jump < 26 else ABC[(start + 4 * self.jump) % 26]
        return f"$intro {' '.join(self.letters)} ... Which letter is next? Answer with \\boxed{{letter}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice.upper() == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.answer}.", $lose, True, False, {}
        if len(choice) != 1 or not choice.isalpha():
            return "Answer with one letter.", 0.0, False, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.answer]
"""

CYCLE_ITEM = r"""
SKILL = "$skill"
HINT = "The $things repeat in a fixed cycle; take the position modulo the cycle length to find the item."
DESCRIPTION = "A row of $things repeats a cycle; name the item at a far position."

ITEMS = $items


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cycle = self.rng.sample(ITEMS, self.rng.randint(3, 4))
        self.where = self.rng.randint(12, 30)
        self.answer = self.cycle[(self.where - 1) % len(self.cycle)]
        row = ", ".join(self.cycle[i % len(self.cycle)] for i in range(2 * len(self.cycle)))
        return f"$intro {row}, ... What is item number {self.where}? Answer with \\boxed{{item}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Item {self.where} is {self.answer}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.answer]
"""

MISSING_TERM = r"""
SKILL = "$skill"
HINT = "Find the common difference from two neighbours, then fill the gap so that all steps are equal."
DESCRIPTION = "Fill in the missing term of an evenly spaced sequence."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        start, step = self.rng.randint(1, 20), self.rng.randint(2, 9)
        self.seq = [start + i * step for i in range(6)]
        self.gap = self.rng.randint(1, 4)
        shown = ", ".join("?" if i == self.gap else str(v) for i, v in enumerate(self.seq))
        return f"$intro {shown}. What is the missing number? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.seq[self.gap]:
            return "$won", 1.0, True, False, {}
        before, after = guess - self.seq[self.gap - 1], self.seq[self.gap + 1] - guess
        if self.turn >= self.max_turns:
            return f"The gap held {self.seq[self.gap]}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.seq[self.gap])]
"""

SUM_OF_TWO = r"""
SKILL = "$skill"
HINT = "Every term is the sum of the two before it: add the last two numbers."
DESCRIPTION = "Continue a sequence where each term adds up the two before it."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.seq = [self.rng.randint(1, $top), self.rng.randint(1, $top)]
        while len(self.seq) < 6:
            self.seq.append(self.seq[-1] + self.seq[-2])
        self.answer = self.seq[-1] + self.seq[-2]
        return f"$intro {', '.join(map(str, self.seq))}, ? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It continues with {self.answer}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]
"""

GROWING_GAP = r"""
SKILL = "$skill"
HINT = "Write down the differences between neighbours: they grow by the same amount each time."
DESCRIPTION = "Continue a sequence whose gaps grow steadily."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        value, gap, self.grow = self.rng.randint(0, 9), self.rng.randint(1, 4), self.rng.randint(1, $grow)
        self.seq = []
        for _ in range(5):
            self.seq.append(value)
            value, gap = value + gap, gap + self.grow
        self.answer = value
        return f"$intro {', '.join(map(str, self.seq))}, ... Answer the next number with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The next number was {self.answer}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]
"""

FAMILIES = [
    Family(
        "geometric_next",
        PATTERN,
        GEOMETRIC,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "cells",
                    "factors": "[2, 3]",
                    "cls": "CellSplit",
                    "grows": "doubles or triples",
                    "intro": "Cells divide every hour:",
                    "won": "The culture matches!",
                },
                {
                    "tag": "plain",
                    "factors": "[2, 3, 4]",
                    "cls": "TimesSequence",
                    "grows": "grows",
                    "intro": "Sequence:",
                    "won": "Correct!",
                },
                {
                    "tag": "rumor",
                    "factors": "[2, 3]",
                    "cls": "RumorSpread",
                    "grows": "spreads",
                    "intro": "People who heard the rumour, day by day:",
                    "won": "Everyone heard it: right!",
                },
            ],
            "style": [
                {"tag": "hl", "feedback": "No, the next term is {'larger' if guess < self.answer else 'smaller'}."},
                {
                    "tag": "ratio",
                    "feedback": "{guess} would mean a factor of {guess / self.terms[-1]:.2f}; the factor is {self.factor if self.turn > 1 else 'constant'}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "0.4 if guess % self.terms[-1] == 0 else 0.0", "turns": "2"},
            ],
        },
    ),
    Family(
        "alternating_steps",
        PATTERN,
        ALTERNATING,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "frog",
                    "cls": "FrogHops",
                    "kind": "hops",
                    "sep": ",",
                    "intro": "A frog hops forward then slips back:",
                    "won": "The frog lands there!",
                },
                {
                    "tag": "stairs",
                    "cls": "StairClimb",
                    "kind": "moves",
                    "sep": "->",
                    "intro": "A climber goes up then down a little:",
                    "won": "Right step!",
                },
                {
                    "tag": "tide",
                    "cls": "TideLevel",
                    "kind": "changes",
                    "sep": "/",
                    "intro": "Water level readings:",
                    "won": "Tide predicted!",
                },
            ],
            "style": [
                {"tag": "no", "feedback": "No. Compare every second number."},
                {"tag": "hl", "feedback": "Wrong, try {'higher' if guess < self.answer else 'lower'}."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - abs(guess - self.answer) / 10), 2)", "turns": "2"},
            ],
        },
    ),
    Family(
        "letter_step",
        PATTERN,
        LETTER_STEP,
        {
            "parse": WORD_PARSE,
            "theme": [
                {"tag": "code", "cls": "LetterCode", "jump": "4", "intro": "A secret code:", "won": "Code cracked!"},
                {
                    "tag": "seats",
                    "cls": "SeatRows",
                    "jump": "3",
                    "intro": "Seat rows called in order:",
                    "won": "That row is next!",
                },
                {"tag": "plain", "cls": "AlphabetJump", "jump": "5", "intro": "Letters:", "won": "Correct letter."},
            ],
            "style": [
                {
                    "tag": "hl",
                    "feedback": "No, the answer comes {'later' if choice.upper() < self.answer else 'earlier'} in the alphabet.",
                },
                {"tag": "dist", "feedback": "No, you are {abs(ord(choice.upper()) - ord(self.answer))} letters off."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {
                    "tag": "p",
                    "lose": "0.3 if len(choice) == 1 and abs(ord(choice.upper()) - ord(self.answer)) == 1 else 0.0",
                    "turns": "3",
                },
            ],
        },
    ),
    Family(
        "cycle_item",
        PATTERN,
        CYCLE_ITEM,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "beads",
                    "cls": "BeadString",
                    "things": "beads",
                    "items": '["red", "blue", "green", "yellow", "white"]',
                    "intro": "Beads on a string:",
                    "won": "Right bead!",
                },
                {
                    "tag": "week",
                    "cls": "ChoreRota",
                    "things": "chores",
                    "items": '["dishes", "laundry", "garden", "shopping", "dusting"]',
                    "intro": "The chore rota repeats:",
                    "won": "The rota agrees.",
                },
                {
                    "tag": "tiles",
                    "cls": "TileFloor",
                    "things": "tiles",
                    "items": '["star", "moon", "sun", "cloud", "leaf"]',
                    "intro": "Floor tiles in a row:",
                    "won": "That tile fits.",
                },
            ],
            "style": [
                {"tag": "no", "feedback": "No, item {self.where} is not {choice or 'that'}."},
                {"tag": "len", "feedback": "Wrong. The cycle is {len(self.cycle)} long."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {"tag": "p", "lose": "0.2 if choice in self.cycle else 0.0", "turns": "2"},
            ],
        },
    ),
    Family(
        "missing_term",
        PATTERN,
        MISSING_TERM,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "fence",
                    "cls": "FencePosts",
                    "intro": "Fence posts are marked at even spacing:",
                    "won": "The fence stands straight!",
                },
                {"tag": "plain", "cls": "GapFill", "intro": "Fill the gap:", "won": "Correct!"},
                {
                    "tag": "train",
                    "cls": "TrainTimes",
                    "intro": "A train leaves at these minutes past the hour:",
                    "won": "On schedule!",
                },
            ],
            "style": [
                {"tag": "gaps", "feedback": "With {guess} the steps would be {before} and {after}; they must match."},
                {"tag": "no", "feedback": "No: the steps around the gap would differ by {abs(before - after)}."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "0.3 if abs(before - after) <= 2 else 0.0", "turns": "2"},
            ],
        },
    ),
    Family(
        "sum_of_two",
        PATTERN,
        SUM_OF_TWO,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "rabbits",
                    "cls": "RabbitPairs",
                    "top": "3",
                    "intro": "Rabbit pairs, month by month:",
                    "won": "The rabbits agree!",
                },
                {"tag": "plain", "cls": "AddLastTwo", "top": "9", "intro": "Sequence:", "won": "Correct."},
                {
                    "tag": "tower",
                    "cls": "BlockTower",
                    "top": "5",
                    "intro": "Blocks in each tower level:",
                    "won": "Tower complete!",
                },
            ],
            "style": [
                {"tag": "hl", "feedback": "No, go {'higher' if guess < self.answer else 'lower'}."},
                {"tag": "gap", "feedback": "{guess} is {abs(guess - self.answer)} away."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - abs(guess - self.answer) / 20), 2)", "turns": "2"},
            ],
        },
    ),
    Family(
        "growing_gap",
        PATTERN,
        GROWING_GAP,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "ball",
                    "cls": "RollingBall",
                    "grow": "2",
                    "intro": "A ball rolls faster each second; its positions:",
                    "won": "The ball is there!",
                },
                {"tag": "plain", "cls": "GapGrowth", "grow": "3", "intro": "Numbers:", "won": "Correct!"},
                {
                    "tag": "savings",
                    "cls": "SavingsJar",
                    "grow": "2",
                    "intro": "Coins in the jar each week:",
                    "won": "Your savings add up!",
                },
            ],
            "style": [
                {"tag": "last", "feedback": "That would be a gap of {guess - self.seq[-1]}."},
                {
                    "tag": "hl",
                    "feedback": "Not {guess}: the answer is {'bigger' if guess < self.answer else 'smaller'}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "0.4 if abs(guess - self.answer) <= self.grow else 0.0", "turns": "2"},
            ],
        },
    ),
]

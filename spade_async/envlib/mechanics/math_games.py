"""Mathematical Reasoning families: a hidden number found from arithmetic feedback."""

from __future__ import annotations

from spade_async.envlib.mechanics import MATH, NUMBER_PARSE, Family

GUESS_NUMBER = r"""
SKILL = "$skill"
HINT = "Halve the range each turn: guess the middle of what is still possible, then follow the $up/$down reply."
DESCRIPTION = "Find the hidden $thing between 1 and $top; each wrong guess is answered with $up or $down."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.$var = self.rng.randint(1, $top)
        return f"$intro It is a number from 1 to $top. You have {self.max_turns} tries. Guess with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.$var:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Out of tries. It was {self.$var}.", $lose, True, False, {}
        word = "$up" if guess < self.$var else "$down"
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.$var)]
"""

SUM_PRODUCT = r"""
SKILL = "$skill"
HINT = "Try pairs that add up to the sum and keep the one whose product matches; answer the smaller number first."
DESCRIPTION = "Find two hidden $things from their sum and their product."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.a = self.rng.randint(2, $top)
        self.b = self.rng.randint(self.a, $top)
        total, product = self.a + self.b, self.a * self.b
        return f"$intro Their sum is {total} and their product is {product}. Answer with \\boxed{{small big}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 5 for p in parts):
            return "Answer with two numbers, like \\boxed{3 8}.", 0.0, False, self.turn >= self.max_turns, {}
        x, y = sorted(int(p) for p in parts)
        if (x, y) == (self.a, self.b):
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The $things were {self.a} and {self.b}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [f"{self.a} {self.b}"]
"""

REMAINDER = r"""
SKILL = "$skill"
HINT = "Divide, drop the whole groups and answer what is left: the remainder is always smaller than the group size."
DESCRIPTION = "Work out a remainder: $story"


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.total = self.rng.randint($low, $high)
        self.size = self.rng.randint(3, 9)
        self.left = self.total % self.size
        return f"$question Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.left:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.left}.", $lose, True, False, {}
        if guess >= self.size:
            return f"Too many: with {self.size} per group at most {self.size - 1} can be left.", 0.0, False, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.left)]
"""

EXPRESSION = r"""
SKILL = "$skill"
HINT = "$hint"
DESCRIPTION = "Compute a total from a short story; wrong totals get $up/$down feedback."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.count = self.rng.randint(2, 9)
        self.each = self.rng.randint(2, 12)
        self.extra = self.rng.randint(1, 20)
        self.answer = $formula
        return f"$question Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The total was {self.answer}.", $lose, True, False, {}
        word = "$up" if guess < self.answer else "$down"
        return f"No, the total is {word}.", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]
"""

DIGIT_SUM = r"""
SKILL = "$skill"
HINT = "Pick a first digit, then the second digit is the target minus it; check the number is in range and $rule."
DESCRIPTION = "Name a number whose digits add up to a target and which $rule."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        pick = self.rng.choice([n for n in range(10, 100) if $check])
        self.target = pick // 10 + pick % 10
        self.options = [n for n in range(10, 100) if n // 10 + n % 10 == self.target and $check]
        return f"$intro Name a two-digit number whose digits add up to {self.target} and which $rule. Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        text = (self.parse_action(action) or "").strip()
        if not text.isdigit() or len(text) != 2:
            return "Answer with a two-digit number, like \\boxed{47}.", 0.0, False, self.turn >= self.max_turns, {}
        n = int(text)
        if n in self.options:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"For example {self.options[0]} works.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.options[0])]
"""

SMALLEST_FACTOR = r"""
SKILL = "$skill"
HINT = "Test 2, 3, 5, 7 ... in order; the first one that divides the number evenly is the answer."
DESCRIPTION = "Find the smallest factor above 1 of a $thing."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        p = self.rng.choice([2, 3, 5, 7, 11, 13])
        self.number = p * self.rng.randint(p, $top)
        self.least = next(d for d in range(2, self.number + 1) if self.number % d == 0)
        return f"$intro {self.number}. What is its smallest factor above 1? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.least:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.least}.", $lose, True, False, {}
        if guess > 1 and self.number % guess == 0:
            return f"$divides", 0.0, False, False, {}
        return f"$nodivide", 0.0, False, False, {}

    def solution(self):
        return [str(self.least)]
"""

FAMILIES = [
    Family(
        "guess_number",
        MATH,
        GUESS_NUMBER,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "vault",
                    "var": "code",
                    "cls": "VaultCode",
                    "thing": "vault code",
                    "top": "60",
                    "intro": "A vault opens for one code.",
                    "won": "The vault swings open!",
                },
                {
                    "tag": "depth",
                    "var": "depth",
                    "cls": "WellDepth",
                    "thing": "depth of the well",
                    "top": "40",
                    "intro": "How many metres deep is the well?",
                    "won": "Splash! Exactly right.",
                },
                {
                    "tag": "wizard",
                    "var": "age",
                    "cls": "WizardAge",
                    "thing": "age of the wizard",
                    "top": "99",
                    "intro": "The wizard asks you to guess his age.",
                    "won": "The wizard bows: correct.",
                },
                {
                    "tag": "marbles",
                    "var": "count",
                    "cls": "MarbleJar",
                    "thing": "count of marbles",
                    "top": "50",
                    "intro": "Guess how many marbles are in the jar.",
                    "won": "You win the jar!",
                },
            ],
            "style": [
                {"tag": "hl", "up": "higher", "down": "lower", "feedback": "{guess} is wrong. Go {word}."},
                {"tag": "big", "up": "too small", "down": "too big", "feedback": "Your guess {guess} is {word}."},
                {
                    "tag": "left",
                    "up": "more",
                    "down": "less",
                    "feedback": "Not {guess}: the answer is {word}. Tries left: {self.max_turns - self.turn}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "7"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - abs(guess - self.$var) / 20), 2)", "turns": "8"},
            ],
        },
    ),
    Family(
        "sum_product",
        MATH,
        SUM_PRODUCT,
        {
            "theme": [
                {
                    "tag": "twins",
                    "cls": "TwinAges",
                    "things": "ages",
                    "top": "12",
                    "intro": "Two cousins tell you about their ages.",
                    "won": "Yes, those are our ages!",
                },
                {
                    "tag": "field",
                    "cls": "FieldSides",
                    "things": "side lengths",
                    "top": "15",
                    "intro": "A field is a rectangle.",
                    "won": "The field is measured.",
                },
                {
                    "tag": "dice",
                    "cls": "TwoDice",
                    "things": "numbers",
                    "top": "9",
                    "intro": "Two hidden tiles carry numbers.",
                    "won": "Both tiles flip over: correct!",
                },
            ],
            "style": [
                {"tag": "sum", "feedback": "No. {x} + {y} = {x + y} and {x} * {y} = {x * y}."},
                {"tag": "hit", "feedback": "Wrong pair. {(x == self.a) + (y == self.b)} of the two numbers are right."},
                {"tag": "no", "feedback": "That pair does not fit both clues. Try again."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "4"},
                {"tag": "p", "lose": "0.3 if x + y == self.a + self.b else 0.0", "turns": "5"},
            ],
        },
    ),
    Family(
        "remainder",
        MATH,
        REMAINDER,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "sweets",
                    "cls": "SweetShare",
                    "story": "sweets shared equally among children.",
                    "low": "20",
                    "high": "80",
                    "question": "{self.total} sweets are shared equally by {self.size} children. How many are left over?",
                    "won": "Right, those are left for you!",
                },
                {
                    "tag": "eggs",
                    "cls": "EggBoxes",
                    "story": "eggs packed into full boxes.",
                    "low": "30",
                    "high": "120",
                    "question": "{self.total} eggs go into boxes of {self.size}. How many eggs do not fill a box?",
                    "won": "All eggs counted.",
                },
                {
                    "tag": "mod",
                    "cls": "ModRemainder",
                    "story": "a number modulo a small one.",
                    "low": "50",
                    "high": "300",
                    "question": "What is {self.total} mod {self.size}?",
                    "won": "Correct remainder.",
                },
                {
                    "tag": "bus",
                    "cls": "BusSeats",
                    "story": "riders filling rows of seats.",
                    "low": "15",
                    "high": "70",
                    "question": "{self.total} riders fill rows of {self.size} seats. How many sit in the last, partly filled row?",
                    "won": "Correct, all aboard.",
                },
            ],
            "style": [
                {"tag": "hl", "feedback": "No, it is {'more' if guess < self.left else 'less'} than {guess}."},
                {"tag": "no", "feedback": "{guess} is not what remains. Try again."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "4"},
                {"tag": "p", "lose": "0.2", "turns": "3"},
            ],
        },
    ),
    Family(
        "story_total",
        MATH,
        EXPRESSION,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "shop",
                    "cls": "ShopBill",
                    "formula": "self.count * self.each + self.extra",
                    "hint": "Multiply the count by the price, then add the delivery fee.",
                    "question": "You buy {self.count} books at {self.each} coins each and pay {self.extra} coins for delivery. What is the bill?",
                    "won": "Paid in full!",
                },
                {
                    "tag": "train",
                    "cls": "TrainSeats",
                    "formula": "self.count * self.each * 2 + self.extra",
                    "hint": "Multiply wagons by seats per deck and by the 2 decks, then add the folding seats.",
                    "question": "A train has {self.count} wagons with {self.each} seats on each of 2 decks, plus {self.extra} folding seats. How many seats in all?",
                    "won": "Every seat counted.",
                },
                {
                    "tag": "garden",
                    "cls": "GardenRows",
                    "formula": "(self.count + self.extra) * self.each",
                    "hint": "Add the new rows to the old rows first, then multiply by plants per row.",
                    "question": "A garden has {self.count} rows and gets {self.extra} more; each row holds {self.each} plants. How many plants in all?",
                    "won": "The garden is full!",
                },
                {
                    "tag": "pages",
                    "cls": "ReadingPages",
                    "formula": "self.count * self.each + self.extra * 2",
                    "hint": "Pages per day times days, plus twice the weekend pages.",
                    "question": "You read {self.each} pages a day for {self.count} days and {self.extra} pages on each of 2 weekend days. How many pages did you read?",
                    "won": "Book finished!",
                },
            ],
            "style": [
                {"tag": "hl", "up": "higher", "down": "lower"},
                {"tag": "ud", "up": "bigger", "down": "smaller"},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "4"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - abs(guess - self.answer) / 50), 2)", "turns": "3"},
            ],
        },
    ),
    Family(
        "digit_sum",
        MATH,
        DIGIT_SUM,
        {
            "rule": [
                {"tag": "even", "rule": "is even", "check": "n % 2 == 0"},
                {"tag": "odd", "rule": "is odd", "check": "n % 2 == 1"},
                {"tag": "big", "rule": "is above 50", "check": "n > 50"},
                {"tag": "tens", "rule": "has a larger tens digit than units digit", "check": "n // 10 > n % 10"},
            ],
            "theme": [
                {
                    "tag": "lock",
                    "cls": "LockDigits",
                    "intro": "A lock wants a special number.",
                    "won": "Click, the lock opens.",
                },
                {"tag": "riddle", "cls": "DigitRiddle", "intro": "Solve the riddle.", "won": "Riddle solved!"},
            ],
            "style": [
                {
                    "tag": "sum",
                    "feedback": "No. The digits of {n} add up to {sum(map(int, text))}.",
                    "lose": "0.0",
                    "turns": "5",
                },
                {
                    "tag": "part",
                    "feedback": "{n} does not fit both rules.",
                    "lose": "0.4 if sum(map(int, text)) == self.target else 0.0",
                    "turns": "4",
                },
            ],
        },
    ),
    Family(
        "smallest_factor",
        MATH,
        SMALLEST_FACTOR,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "crate",
                    "cls": "CrateSplit",
                    "thing": "number of apples",
                    "top": "19",
                    "intro": "A crate holds",
                },
                {"tag": "plain", "cls": "LeastFactor", "thing": "whole number", "top": "25", "intro": "The number is"},
                {"tag": "army", "cls": "ArmyRows", "thing": "troop size", "top": "15", "intro": "The troop has"},
                {"tag": "tiles", "cls": "TileRows", "thing": "tile count", "top": "21", "intro": "A floor uses"},
            ],
            "style": [
                {
                    "tag": "say",
                    "won": "Yes, that is the smallest factor.",
                    "divides": "{guess} divides {self.number}, but a smaller factor exists.",
                    "nodivide": "{guess} does not divide {self.number}.",
                },
                {
                    "tag": "rem",
                    "won": "Correct!",
                    "divides": "{guess} works but is not the smallest.",
                    "nodivide": "{self.number} / {guess} leaves {self.number % guess if guess else 'nothing'}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "5"},
                {"tag": "p", "lose": "0.3 if guess > 1 and self.number % guess == 0 else 0.0", "turns": "6"},
            ],
        },
    ),
]

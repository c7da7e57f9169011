"""Logical Deduction families: the answer follows from stated clues, never from luck."""

from __future__ import annotations

from spade_async.envlib.mechanics import LOGIC, WORD_PARSE, Family

ONE_TRUE_NOTE = r"""
SKILL = "$skill"
HINT = "Exactly one note is true: for each $box, suppose the $prize is there and count the true notes; pick the one where the count is one."
DESCRIPTION = "Find the $prize when exactly one of three notes tells the truth."

$LIST = $words


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.options = self.rng.sample($LIST, 3)
        while True:
            notes = [(self.rng.choice(["is", "is not"]), self.rng.choice(self.options)) for _ in range(3)]
            fits = [o for o in self.options if sum((o == x) == (w == "is") for w, x in notes) == 1]
            if len(fits) == 1:
                break
        self.$var = fits[0]
        said = " ".join(f"Note {i + 1}: the $prize {w} in the {x} $box." for i, (w, x) in enumerate(notes))
        return f"$intro {', '.join(self.options)}. {said} Exactly one note is true. Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.$var:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The $prize was in the {self.$var} $box.", $lose, True, False, {}
        if choice in self.options:
            return f"$empty", 0.0, False, False, {}
        return f"Choose one of: {', '.join(self.options)}.", 0.0, False, False, {}

    def solution(self):
        return [self.$var]
"""

OWNER_CLUES = r"""
SKILL = "$skill"
HINT = "Each $person has exactly one $item. Place the certain clue first, then the 'does not' clue leaves one choice for the others."
DESCRIPTION = "Work out who has which $item from two clues and name the owner asked for."

PEOPLE = $people
ITEMS = $items


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        people = self.rng.sample(PEOPLE, 3)
        things = self.rng.sample(ITEMS, 3)
        self.owner = dict(zip(things, people))
        first, second = people[0], people[1]
        wrong = things[2]
        self.asked = self.rng.choice(things)
        clues = f"{first} has the {things[0]}. {second} does not have the {wrong}."
        return f"$intro {', '.join(people)} each have one of: {', '.join(sorted(things))}. {clues} Who has the {self.asked}? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.owner[self.asked].lower():
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.owner[self.asked]}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.owner[self.asked]]
"""

PAIR_ORDER = r"""
SKILL = "$skill"
HINT = "Chain the comparisons: whoever is never on the losing side of a '$more' clue is the answer."
DESCRIPTION = "Find the $top of four from pairwise comparisons."

NAMES = $names


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.order = self.rng.sample(NAMES, 4)
        pairs = [(self.order[i], self.order[i + 1]) for i in range(3)]
        self.rng.shuffle(pairs)
        facts = " ".join(f"{a} is $more than {b}." for a, b in pairs)
        return f"{facts} Who is the $top? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.order[0].lower():
            return "$won", 1.0, True, False, {}
        rank = [n.lower() for n in self.order].index(choice) if choice in [n.lower() for n in self.order] else None
        if self.turn >= self.max_turns:
            return f"The $top is {self.order[0]}.", $lose, True, False, {}
        if rank is None:
            return f"Name one of: {', '.join(sorted(self.order))}.", 0.0, False, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.order[0]]
"""

YES_NO = r"""
SKILL = "$skill"
HINT = "Ask about a trait that splits the remaining $things in half, drop those that do not match, then guess the last one."
DESCRIPTION = "Identify a hidden $thing by asking yes/no questions about its traits."

TRAITS = $traits


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.names = sorted(self.rng.sample(sorted(TRAITS), 5))
        self.$var = self.rng.choice(self.names)
        traits = sorted({t for n in self.names for t in TRAITS[n]})
        return f"$intro {', '.join(self.names)}. Ask \\boxed{{ask TRAIT}} with a trait from {', '.join(traits)}, or answer \\boxed{{guess NAME}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        verb, _, word = choice.partition(" ")
        if verb == "guess" and word == self.$var:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was the {self.$var}.", $lose, True, False, {}
        if verb == "ask":
            return f"$answer", 0.0, False, False, {}
        if verb == "guess":
            return f"Not the {word}.", 0.0, False, False, {}
        return "Use \\boxed{ask TRAIT} or \\boxed{guess NAME}.", 0.0, False, False, {}

    def solution(self):
        return [f"guess {self.$var}"]
"""

KNIGHTS = r"""
SKILL = "$skill"
HINT = "Try every way to mark each $person honest or lying; keep the one where honest ones speak true and liars speak false."
DESCRIPTION = "Three $people: $honest always tell the truth, $liars always lie. Name the $honest."

SAYS = ["{} is $one_honest.", "{} is $one_liar.", "{} and I are both $honest.", "at least one of {} and me is $one_liar."]


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            says = [(self.rng.choice([j for j in range(3) if j != i]), self.rng.randrange(4)) for i in range(3)]
            worlds = [w for w in itertools.product([True, False], repeat=3) if all(w[i] == [w[j], not w[j], w[i] and w[j], not (w[i] and w[j])][k] for i, (j, k) in enumerate(says))]
            if len(worlds) == 1:
                break
        self.answer = " ".join(n for n, ok in zip("ABC", worlds[0]) if ok) or "none"
        lines = " ".join(f"{n} says: " + SAYS[k].format("ABC"[j]) for n, (j, k) in zip("ABC", says))
        return f"$intro {lines} Who are the $honest? Answer like \\boxed{{A C}}, or \\boxed{{none}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if " ".join(sorted(choice.upper().split())) == self.answer.upper():
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The $honest: {self.answer}.", $lose, True, False, {}
        return "$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.answer]
"""

CHAIN = r"""
SKILL = "$skill"
HINT = "Follow the 'every X is a Y' rules like arrows; only the $thing whose chain reaches the goal group must belong to it."
DESCRIPTION = "From rules of the form 'every A is a B', find which $thing must be a member of a group."

WORDS = $words


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        a, b, c, d, e = self.rng.sample(WORDS, 5)
        self.answer = a
        rules = [f"Every {a} is a {b}.", f"Every {b} is a {c}.", f"Every {c} is a {d}.", f"Some {e} are {d}s."]
        self.rng.shuffle(rules)
        self.goal = d
        return f"$intro {' '.join(rules)} Which must be a {d}: {a} or {e}? Answer with \\boxed{{word}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Only every {self.answer} must be a {self.goal}.", $lose, True, False, {}
        return "$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.answer]
"""

FAMILIES = [
    Family(
        "one_true_note",
        LOGIC,
        ONE_TRUE_NOTE,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "boxes",
                    "cls": "ColorBoxes",
                    "LIST": "COLORS",
                    "var": "prize",
                    "words": '["red", "blue", "green", "white", "black", "gold"]',
                    "prize": "prize",
                    "box": "box",
                    "intro": "Three boxes:",
                    "won": "The prize is yours!",
                    "empty": "The {choice} box is empty.",
                },
                {
                    "tag": "caves",
                    "cls": "DragonCave",
                    "LIST": "CAVES",
                    "var": "dragon",
                    "words": '["north", "south", "east", "west", "deep", "high"]',
                    "prize": "dragon",
                    "box": "cave",
                    "intro": "A dragon sleeps in one of the caves:",
                    "won": "You found the dragon's lair!",
                    "empty": "Only bats in the {choice} cave.",
                },
                {
                    "tag": "cups",
                    "cls": "CupTrick",
                    "LIST": "CUPS",
                    "var": "coin",
                    "words": '["left", "middle", "right", "tall", "short", "wide"]',
                    "prize": "coin",
                    "box": "cup",
                    "intro": "A coin hides under one cup:",
                    "won": "There is the coin!",
                    "empty": "Nothing under the {choice} cup.",
                },
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "2"}, {"tag": "p", "lose": "0.1", "turns": "2"}],
        },
    ),
    Family(
        "owner_clues",
        LOGIC,
        OWNER_CLUES,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "pets",
                    "cls": "PetOwners",
                    "person": "child",
                    "item": "pet",
                    "people": '["Ann", "Bob", "Cleo", "Dan", "Eve"]',
                    "items": '["cat", "dog", "fish", "bird", "frog"]',
                    "intro": "Three children and three pets.",
                    "won": "Yes, that is the owner!",
                },
                {
                    "tag": "hats",
                    "cls": "HatParty",
                    "person": "guest",
                    "item": "hat",
                    "people": '["Mia", "Leo", "Ivy", "Tom", "Zoe"]',
                    "items": '["red hat", "top hat", "cap", "beret", "crown"]',
                    "intro": "At a party each guest wears a hat.",
                    "won": "Right guest!",
                },
                {
                    "tag": "jobs",
                    "cls": "TownJobs",
                    "person": "worker",
                    "item": "job",
                    "people": '["Ada", "Ben", "Cy", "Dot", "Ed"]',
                    "items": '["baker", "smith", "miller", "tailor", "guard"]',
                    "intro": "Three workers share the town's jobs.",
                    "won": "Correct, the mayor agrees.",
                },
            ],
            "style": [
                {"tag": "no", "feedback": "No, {choice or 'nobody'} does not have it."},
                {"tag": "re", "feedback": "Wrong. Read the two clues again."},
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "2"}, {"tag": "p", "lose": "0.2", "turns": "3"}],
        },
    ),
    Family(
        "pair_order",
        LOGIC,
        PAIR_ORDER,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "tall",
                    "cls": "TallestKid",
                    "more": "taller",
                    "top": "tallest",
                    "names": '["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn"]',
                },
                {
                    "tag": "fast",
                    "cls": "FastestRunner",
                    "more": "faster",
                    "top": "fastest",
                    "names": '["Kai", "Lia", "Max", "Nia", "Oto", "Pia"]',
                },
                {
                    "tag": "old",
                    "cls": "OldestTree",
                    "more": "older",
                    "top": "oldest",
                    "names": '["oak", "elm", "ash", "pine", "birch", "yew"]',
                },
                {
                    "tag": "heavy",
                    "cls": "HeaviestBag",
                    "more": "heavier",
                    "top": "heaviest",
                    "names": '["red", "blue", "green", "gray", "pink", "tan"]',
                },
            ],
            "style": [
                {"tag": "rank", "won": "Correct!", "feedback": "No, {choice} is number {rank + 1} of 4."},
                {
                    "tag": "beat",
                    "won": "Yes, nobody beats that one.",
                    "feedback": "No, someone is $more than {choice}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {"tag": "p", "lose": "round(0.9 - 0.3 * rank, 2) if rank else 0.0", "turns": "2"},
            ],
        },
    ),
    Family(
        "yes_no_traits",
        LOGIC,
        YES_NO,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "zoo",
                    "cls": "ZooAnimal",
                    "thing": "animal",
                    "things": "animals",
                    "var": "animal",
                    "intro": "A hidden animal is one of:",
                    "won": "Yes, the animal is found!",
                    "traits": '{"bat": ["flies", "furry"], "cat": ["furry", "pet"], "duck": ["flies", "swims"], "eel": ["swims"], "hawk": ["flies"], "seal": ["swims", "furry"], "dog": ["pet", "furry"], "goldfish": ["pet", "swims"]}',
                },
                {
                    "tag": "food",
                    "cls": "MysteryFood",
                    "thing": "food",
                    "things": "foods",
                    "var": "food",
                    "intro": "The mystery food is one of:",
                    "won": "Tasty, you got it!",
                    "traits": '{"lemon": ["sour", "fruit"], "cake": ["sweet", "baked"], "bread": ["baked"], "apple": ["sweet", "fruit"], "pickle": ["sour"], "cookie": ["sweet", "baked"], "lime": ["sour", "fruit"], "salt": []}',
                },
                {
                    "tag": "tool",
                    "cls": "ToolBox",
                    "thing": "tool",
                    "things": "tools",
                    "var": "tool",
                    "intro": "The missing tool is one of:",
                    "won": "Found the tool!",
                    "traits": '{"saw": ["sharp", "metal"], "hammer": ["metal", "heavy"], "brush": ["soft"], "axe": ["sharp", "heavy"], "rope": ["soft"], "drill": ["metal", "electric"], "lamp": ["electric"], "knife": ["sharp", "metal"]}',
                },
            ],
            "style": [
                {"tag": "yn", "answer": "{'Yes' if word in TRAITS[self.$var] else 'No'}, {word}."},
                {"tag": "it", "answer": "The $thing {'is' if word in TRAITS[self.$var] else 'is not'} {word}."},
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "6"}, {"tag": "p", "lose": "0.1", "turns": "7"}],
        },
    ),
    Family(
        "knights_liars",
        LOGIC,
        KNIGHTS,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "isle",
                    "cls": "KnightIsle",
                    "person": "islander",
                    "people": "islanders",
                    "honest": "knights",
                    "liars": "knaves",
                    "one_honest": "a knight",
                    "one_liar": "a knave",
                    "intro": "On the island of knights and knaves you meet A, B and C.",
                    "won": "The knights salute you!",
                },
                {
                    "tag": "guards",
                    "cls": "GateGuards",
                    "person": "guard",
                    "people": "guards",
                    "honest": "truthful guards",
                    "liars": "the others",
                    "one_honest": "truthful",
                    "one_liar": "a liar",
                    "intro": "Three guards A, B and C stand at the gate.",
                    "won": "The gate opens.",
                },
                {
                    "tag": "robots",
                    "cls": "RobotTalk",
                    "person": "robot",
                    "people": "robots",
                    "honest": "working robots",
                    "liars": "broken ones",
                    "one_honest": "working",
                    "one_liar": "broken",
                    "intro": "Robots A, B and C report on each other.",
                    "won": "Diagnosis correct!",
                },
            ],
            "style": [
                {"tag": "no", "feedback": "That set does not fit the statements."},
                {"tag": "try", "feedback": "Wrong. Check each statement under your answer."},
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "2"}, {"tag": "p", "lose": "0.1", "turns": "3"}],
        },
    ),
    Family(
        "rule_chain",
        LOGIC,
        CHAIN,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "nonsense",
                    "cls": "BloopChain",
                    "thing": "creature",
                    "words": '["bloop", "razzie", "lazzie", "fleep", "gorp", "wug", "zib"]',
                    "intro": "Strange creatures follow rules.",
                },
                {
                    "tag": "shapes",
                    "cls": "ShapeClub",
                    "thing": "shape",
                    "words": '["ket", "mav", "dross", "plim", "sorn", "tib", "quon"]',
                    "intro": "In a land of odd shapes:",
                },
                {
                    "tag": "guild",
                    "cls": "GuildRanks",
                    "thing": "member",
                    "words": '["squire", "page", "ranger", "scout", "herald", "bard", "monk"]',
                    "intro": "The guild has rules about its ranks.",
                },
            ],
            "style": [
                {"tag": "no", "won": "Right, the chain proves it.", "feedback": "No: nothing forces that one."},
                {"tag": "some", "won": "Correct!", "feedback": "'Some' does not mean 'every'. Try again."},
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "1"}, {"tag": "p", "lose": "0.1", "turns": "1"}],
        },
    ),
]

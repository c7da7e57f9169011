"""Causal Inference families: find what causes an effect by intervening or by reading data."""

from __future__ import annotations

from spade_async.envlib.mechanics import CAUSAL, NUMBER_PARSE, WORD_PARSE, Family

WIRED_SWITCH = r"""
SKILL = "$skill"
HINT = "Flip one $switch at a time and watch the $lamp; the $switch that changes it is the cause. Then answer it."
DESCRIPTION = "Test $switches to find the one that controls the $lamp, then name it."

NAMES = $names


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(NAMES)
        self.lit = False
        return f"$intro $Switches: {', '.join(NAMES)}. Use \\boxed{{flip X}} to test, \\boxed{{answer X}} to decide.", {}

    def step(self, action):
        self.turn += 1
        $parse
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns or verb == "answer":
            return f"It was {self.cause}.", $lose, True, False, {}
        if verb == "flip" and name in NAMES:
            self.lit = self.lit != (name == self.cause)
            return f"$feedback", 0.0, False, False, {}
        return "Use flip X or answer X.", 0.0, False, False, {}

    def solution(self):
        return [f"answer {self.cause}"]
"""

CULPRIT_TEST = r"""
SKILL = "$skill"
HINT = "Test half of the suspects at once: a reaction means the culprit is in that half. Then blame it."
DESCRIPTION = "Group tests reveal which $suspect causes the $effect."

SUSPECTS = $names


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.culprit = self.rng.choice(SUSPECTS)
        return f"$intro One of {', '.join(SUSPECTS)} causes the $effect. Test a group with \\boxed{{test A B}}; blame with \\boxed{{blame A}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        words = choice.split()
        if words[:1] == ["blame"] and words[1:] == [self.culprit]:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns or words[:1] == ["blame"]:
            return f"The culprit was {self.culprit}.", $lose, True, False, {}
        group = [w for w in words[1:] if w in SUSPECTS]
        if words[:1] != ["test"] or not group:
            return "Use test X Y or blame X.", 0.0, False, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [f"blame {self.culprit}"]
"""

LEVER_GAUGE = r"""
SKILL = "$skill"
HINT = "Pull each $lever once to learn how much it moves the $gauge, then combine pulls to land on the target."
DESCRIPTION = "$Levers move a $gauge by hidden amounts; reach the target reading."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.effect = dict(zip("ABC", self.rng.sample([-3, -2, -1, 1, 2, 3, 4], 3)))
        self.value = self.rng.randint(10, 20)
        self.plan = [self.rng.choice("ABC") for _ in range(3)]
        self.target = self.value + sum(self.effect[p] for p in self.plan)
        while self.target == self.value:
            self.plan.append("A")
            self.target += self.effect["A"]
        return f"$intro The $gauge reads {self.value}; the target is {self.target}. Pull with \\boxed{{A}}, \\boxed{{B}} or \\boxed{{C}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        lever = choice.upper()
        if lever not in self.effect:
            return "Pull A, B or C.", 0.0, False, self.turn >= self.max_turns, {}
        self.value += self.effect[lever]
        if self.value == self.target:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The $gauge stopped at {self.value}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return list(self.plan)
"""

DELAYED_BELL = r"""
SKILL = "$skill"
HINT = "The effect shows one turn late: the $bell $rings after the press before the last one; match it to that $button."
DESCRIPTION = "A $bell reacts one turn late; find the $button that causes it."

BUTTONS = $names


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(BUTTONS)
        self.last = None
        return f"$intro $Buttons: {', '.join(BUTTONS)}. Each result shows one turn late. \\boxed{{press X}} or \\boxed{{answer X}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        verb, _, name = choice.partition(" ")
        if verb == "answer" and name == self.cause:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns or verb == "answer":
            return f"It was {self.cause}.", $lose, True, False, {}
        if verb != "press" or name not in BUTTONS:
            return "Use press X or answer X.", 0.0, False, False, {}
        rang, self.last = self.last == self.cause, name
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [f"answer {self.cause}"]
"""

WHICH_FACTOR = r"""
SKILL = "$skill"
HINT = "Find the factor that is on exactly in the $trials where the $outcome happened; the others do not line up."
DESCRIPTION = "From a table of $trials, find which factor causes the $outcome."

FACTORS = $names


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.cause = self.rng.choice(FACTORS)
        while True:
            rows = [{f: self.rng.random() < 0.5 for f in FACTORS} for _ in range(5)]
            if sum(all(r[f] == r[self.cause] for r in rows) for f in FACTORS) == 1:
                break
        table = " ".join(f"$Trial {i + 1}: {', '.join(f for f in FACTORS if r[f]) or 'nothing'} -> {'$yes' if r[self.cause] else '$no'}." for i, r in enumerate(rows))
        return f"$intro {table} Which factor causes the $outcome? Answer with \\boxed{{factor}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.cause:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.cause}.", $lose, True, False, {}
        return "$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.cause]
"""

DOSE_TARGET = r"""
SKILL = "$skill"
HINT = "The $output rises by the same amount per step of the $knob: try two settings, work out the rule, and solve for the target."
DESCRIPTION = "Set a $knob so that its hidden linear effect gives the target $output."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.rate, self.base = self.rng.randint(2, 5), self.rng.randint(0, 9)
        self.best = self.rng.randint(1, 9)
        self.target = self.rate * self.best + self.base
        return f"$intro Target $output: {self.target}. Try a setting from 0 to 12 with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        made = self.rate * guess + self.base
        if guess == self.best:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Setting {self.best} was right.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.best)]
"""

FAMILIES = [
    Family(
        "wired_switch",
        CAUSAL,
        WIRED_SWITCH,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "lamp",
                    "cls": "LampWiring",
                    "switch": "switch",
                    "switches": "switches",
                    "Switches": "Switches",
                    "lamp": "lamp",
                    "names": '["a", "b", "c", "d"]',
                    "intro": "A dark room.",
                    "won": "Right, that switch powers the lamp!",
                },
                {
                    "tag": "fan",
                    "cls": "FanFuse",
                    "switch": "fuse",
                    "switches": "fuses",
                    "Switches": "Fuses",
                    "lamp": "fan",
                    "names": '["red", "blue", "green", "black", "white"]',
                    "intro": "The fan is off.",
                    "won": "The fan is yours to control!",
                },
                {
                    "tag": "gate",
                    "cls": "GateLever",
                    "switch": "lever",
                    "switches": "levers",
                    "Switches": "Levers",
                    "lamp": "gate",
                    "names": '["left", "middle", "right"]',
                    "intro": "A closed castle gate.",
                    "won": "The gate obeys you!",
                },
            ],
            "style": [
                {"tag": "state", "feedback": "The $lamp is now {'on' if self.lit else 'off'}."},
                {
                    "tag": "change",
                    "feedback": "{'Something changed' if name == self.cause else 'Nothing changed'} after {name}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "6"},
                {"tag": "p", "lose": "0.1 if verb == 'answer' else 0.0", "turns": "6"},
            ],
        },
    ),
    Family(
        "culprit_test",
        CAUSAL,
        CULPRIT_TEST,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "rash",
                    "cls": "RashFood",
                    "suspect": "food",
                    "effect": "rash",
                    "names": '["milk", "nuts", "egg", "wheat", "fish", "soy"]',
                    "intro": "You get a rash from one food.",
                },
                {
                    "tag": "crash",
                    "cls": "CrashPlugin",
                    "suspect": "plugin",
                    "effect": "crash",
                    "names": '["audio", "video", "chat", "maps", "cloud", "print"]',
                    "intro": "One plugin crashes the app.",
                },
                {
                    "tag": "wilt",
                    "cls": "WiltingPlant",
                    "suspect": "spray",
                    "effect": "wilting",
                    "names": '["neem", "soap", "oil", "vinegar", "garlic", "pepper"]',
                    "intro": "One spray makes plants wilt.",
                },
            ],
            "style": [
                {
                    "tag": "yn",
                    "won": "Found the culprit!",
                    "feedback": "{'Reaction!' if self.culprit in group else 'No reaction.'}",
                },
                {
                    "tag": "say",
                    "won": "Correct, that is the cause.",
                    "feedback": "Testing {' '.join(group)}: {'the $effect appears' if self.culprit in group else 'all clear'}.",
                },
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "5"}, {"tag": "p", "lose": "0.1", "turns": "6"}],
        },
    ),
    Family(
        "lever_gauge",
        CAUSAL,
        LEVER_GAUGE,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "boiler",
                    "cls": "BoilerValves",
                    "lever": "valve",
                    "Levers": "Valves",
                    "gauge": "pressure gauge",
                    "intro": "A boiler has three valves A, B and C.",
                    "won": "Pressure on target!",
                },
                {
                    "tag": "radio",
                    "cls": "RadioDial",
                    "lever": "button",
                    "Levers": "Buttons",
                    "gauge": "frequency",
                    "intro": "An old radio has buttons A, B and C.",
                    "won": "Station found!",
                },
                {
                    "tag": "dam",
                    "cls": "DamGates",
                    "lever": "gate",
                    "Levers": "Gates",
                    "gauge": "water level",
                    "intro": "A dam has gates A, B and C.",
                    "won": "Water level perfect!",
                },
            ],
            "style": [
                {"tag": "now", "feedback": "The $gauge now reads {self.value}."},
                {"tag": "moved", "feedback": "{lever} moved it by {self.effect[lever]:+d}; it reads {self.value}."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "8"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - 0.15 * abs(self.target - self.value)), 2)", "turns": "9"},
            ],
        },
    ),
    Family(
        "delayed_bell",
        CAUSAL,
        DELAYED_BELL,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "bell",
                    "cls": "LateBell",
                    "bell": "bell",
                    "rings": "rings",
                    "button": "button",
                    "Buttons": "Buttons",
                    "names": '["red", "blue", "green", "gray"]',
                    "intro": "A bell rings one turn late.",
                },
                {
                    "tag": "dog",
                    "cls": "SlowDog",
                    "bell": "dog",
                    "rings": "barks",
                    "button": "whistle",
                    "Buttons": "Whistles",
                    "names": '["high", "low", "short", "long"]',
                    "intro": "A sleepy dog reacts late.",
                },
                {
                    "tag": "rocket",
                    "cls": "RocketRelay",
                    "bell": "rocket",
                    "rings": "fires",
                    "button": "relay",
                    "Buttons": "Relays",
                    "names": '["r1", "r2", "r3", "r4"]',
                    "intro": "A rocket engine fires with a delay.",
                },
            ],
            "style": [
                {
                    "tag": "plain",
                    "won": "You found the cause!",
                    "feedback": "You press {name}. The $bell {'$rings' if rang else 'is quiet'}.",
                },
                {
                    "tag": "log",
                    "won": "Cause identified.",
                    "feedback": "Pressed {name}. Effect of the previous press: {'yes' if rang else 'no'}.",
                },
            ],
            "reward": [{"tag": "w", "lose": "0.0", "turns": "7"}, {"tag": "p", "lose": "0.1", "turns": "8"}],
        },
    ),
    Family(
        "which_factor",
        CAUSAL,
        WHICH_FACTOR,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "plant",
                    "cls": "PlantGrowth",
                    "trials": "pots",
                    "Trial": "Pot",
                    "outcome": "flowering",
                    "yes": "flowers",
                    "no": "no flowers",
                    "names": '["water", "light", "soil", "music"]',
                    "intro": "A gardener tried pots with different care.",
                },
                {
                    "tag": "cake",
                    "cls": "CakeRise",
                    "trials": "bakes",
                    "Trial": "Bake",
                    "outcome": "rising",
                    "yes": "rose",
                    "no": "flat",
                    "names": '["yeast", "sugar", "milk", "salt"]',
                    "intro": "A baker kept notes.",
                },
                {
                    "tag": "car",
                    "cls": "CarStart",
                    "trials": "mornings",
                    "Trial": "Morning",
                    "outcome": "failed start",
                    "yes": "failed",
                    "no": "started",
                    "names": '["rain", "frost", "wind", "fog"]',
                    "intro": "Your car fails to start some mornings.",
                },
            ],
            "style": [
                {
                    "tag": "no",
                    "won": "Correct, that is the cause.",
                    "feedback": "No, that factor does not line up with the table.",
                },
                {"tag": "look", "won": "Yes! Well deduced.", "feedback": "Look for a row that breaks that idea."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {"tag": "p", "lose": "0.2 if choice in FACTORS else 0.0", "turns": "1"},
            ],
        },
    ),
    Family(
        "dose_target",
        CAUSAL,
        DOSE_TARGET,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "heat",
                    "cls": "HeaterDial",
                    "knob": "dial",
                    "output": "temperature",
                    "intro": "A heater dial controls the room.",
                },
                {
                    "tag": "light",
                    "cls": "DimmerLight",
                    "knob": "dimmer",
                    "output": "brightness",
                    "intro": "A dimmer controls a lamp.",
                },
                {
                    "tag": "feed",
                    "cls": "FishFeed",
                    "knob": "feeder",
                    "output": "fish weight",
                    "intro": "A feeder setting decides how fast fish grow.",
                },
            ],
            "style": [
                {"tag": "out", "won": "Exactly on target!", "feedback": "Setting {guess} gives {made}."},
                {
                    "tag": "hl",
                    "won": "Perfect setting!",
                    "feedback": "That gives {made}, {'below' if made < self.target else 'above'} the target.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "5"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - abs(made - self.target) / 20), 2)", "turns": "5"},
            ],
        },
    ),
]

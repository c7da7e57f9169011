"""Spatial Reasoning families: positions, directions and moves on lines and grids."""

from __future__ import annotations

from spade_async.envlib.mechanics import SPATIAL, WORD_PARSE, Family

HIDDEN_CELL = r"""
SKILL = "$skill"
HINT = "$hint"
DESCRIPTION = "Find a hidden cell on a $size by $size grid; each guess tells you $tells."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.row = self.rng.randint(1, $size)
        self.col = self.rng.randint(1, $size)
        return f"$intro Rows and columns go from 1 to $size. Guess with \\boxed{{row col}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").split()
        if len(parts) != 2 or not all(p.isdigit() and len(p) < 3 for p in parts):
            return "Guess a cell like \\boxed{2 3}.", 0.0, False, self.turn >= self.max_turns, {}
        r, c = int(parts[0]), int(parts[1])
        far = abs(r - self.row) + abs(c - self.col)
        if far == 0:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was at {self.row} {self.col}.", $lose, True, False, {}
        $feedback

    def solution(self):
        return [f"{self.row} {self.col}"]
"""

LINE_WALK = r"""
SKILL = "$skill"
HINT = "Compare your position with the $goal: step $plus while you are below it and $minus while you are above it."
DESCRIPTION = "Walk along a $track to reach the $goal, one step at a time."

STEPS = {"$plus": 1, "$minus": -1}


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.pos = self.rng.randint(0, 9)
        self.goal = self.rng.choice([p for p in range(10) if 2 <= abs(p - self.pos) <= 4])
        return f"$intro You are at {self.pos} and the $goal is at {self.goal}. Move with \\boxed{{$plus}} or \\boxed{{$minus}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice not in STEPS:
            return "Only $plus or $minus.", 0.0, False, self.turn >= self.max_turns, {}
        self.pos = min(9, max(0, self.pos + STEPS[choice]))
        if self.pos == self.goal:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "$late", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        move = "$plus" if self.goal > self.pos else "$minus"
        return [move] * abs(self.goal - self.pos)
"""

COMPASS_TURN = r"""
SKILL = "$skill"
HINT = "Clockwise order is north, east, south, west: one step clockwise is right, one step back is left, two steps is around."
DESCRIPTION = "Turn once to face $target; say left, right or around."

DIRS = ["north", "east", "south", "west"]
TURNS = {"right": 1, "around": 2, "left": 3}


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.facing = self.rng.randrange(4)
        self.want = (self.facing + self.rng.randint(1, 3)) % 4
        return f"$intro You face {DIRS[self.facing]}; $where {DIRS[self.want]}. Turn with \\boxed{{left}}, \\boxed{{right}} or \\boxed{{around}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice not in TURNS:
            return "Say left, right or around.", 0.0, False, self.turn >= self.max_turns, {}
        now = (self.facing + TURNS[choice]) % 4
        if now == self.want:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"You end up facing {DIRS[now]}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [next(t for t, k in TURNS.items() if (self.facing + k) % 4 == self.want)]
"""

GRID_WALK = r"""
SKILL = "$skill"
HINT = "Go around the $block: first move $first until the column matches, then move along the rows to the $goal."
DESCRIPTION = "Walk on a small grid to the $goal without stepping onto the $block."

MOVES = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.at = (self.rng.randint(0, 4), self.rng.randint(0, 4))
        cells = [(r, c) for r in range(5) for c in range(5) if 2 <= abs(r - self.at[0]) + abs(c - self.at[1]) <= 5]
        self.goal = self.rng.choice(cells)
        path = [(self.at[0], c) for c in range(5)] + [(r, self.goal[1]) for r in range(5)]
        self.block = self.rng.choice([x for x in cells if x not in path and x != self.goal] or [(9, 9)])
        return f"$intro You are at {self.at}, the $goal at {self.goal}, a $block at {self.block}. (row, col); north lowers the row. Move with \\boxed{{north}}, south, east or west.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice not in MOVES:
            return "Move north, south, east or west.", 0.0, False, self.turn >= self.max_turns, {}
        r, c = self.at[0] + MOVES[choice][0], self.at[1] + MOVES[choice][1]
        if 0 <= r < 5 and 0 <= c < 5 and (r, c) != self.block:
            self.at = (r, c)
        if self.at == self.goal:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "$late", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        dr, dc = self.goal[0] - self.at[0], self.goal[1] - self.at[1]
        return ["east" if dc > 0 else "west"] * abs(dc) + ["south" if dr > 0 else "north"] * abs(dr)
"""

MIRROR_POINT = r"""
SKILL = "$skill"
HINT = "$hint"
DESCRIPTION = "Reflect a point $across and give its new coordinates."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.x, self.y = self.rng.randint(0, 9), self.rng.randint(0, 9)
        self.m = self.rng.randint(2, 7)
        self.answer = $answer
        return f"$intro The point is at x={self.x}, y={self.y}. Reflect it $shown. Answer with \\boxed{{x y}}.", {}

    def step(self, action):
        self.turn += 1
        parts = (self.parse_action(action) or "").replace(",", " ").split()
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() and len(p) < 4 for p in parts):
            return "Answer with two numbers, like \\boxed{3 5}.", 0.0, False, self.turn >= self.max_turns, {}
        got = (int(parts[0]), int(parts[1]))
        if got == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The reflection is {self.answer[0]} {self.answer[1]}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [f"{self.answer[0]} {self.answer[1]}"]
"""

RELATIVE_DIRECTION = r"""
SKILL = "$skill"
HINT = "Add up the steps: one north and one east make northeast; a north and a south cancel out."
DESCRIPTION = "Combine two relative positions to tell where one $thing lies from another."

STEP = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        a, b, c = self.rng.sample($names, 3)
        one, two = self.rng.sample(sorted(STEP), 2)
        while STEP[one][0] + STEP[two][0] == 0 and STEP[one][1] + STEP[two][1] == 0:
            two = self.rng.choice(sorted(STEP))
        x, y = STEP[one][0] + STEP[two][0], STEP[one][1] + STEP[two][1]
        self.answer = ("north" if y > 0 else "south" if y < 0 else "") + ("east" if x > 0 else "west" if x < 0 else "")
        return f"$intro The {a} is {one} of the {b}. The {b} is {two} of the {c}. In which direction is the {a} from the {c}? Answer like \\boxed{{northwest}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        choice = choice.replace("-", "").replace(" ", "")
        if choice == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It is {self.answer}.", $lose, True, False, {}
        return "$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.answer]
"""

FAMILIES = [
    Family(
        "hidden_cell",
        SPATIAL,
        HIDDEN_CELL,
        {
            "theme": [
                {
                    "tag": "mine",
                    "cls": "BuriedMine",
                    "size": "5",
                    "intro": "A mine is buried in the field.",
                    "won": "Mine found and defused!",
                },
                {
                    "tag": "ship",
                    "cls": "SunkenShip",
                    "size": "6",
                    "intro": "A ship sank somewhere in the bay.",
                    "won": "Divers reach the wreck!",
                },
                {
                    "tag": "key",
                    "cls": "LostKey",
                    "size": "4",
                    "intro": "You dropped a key on the tiled floor.",
                    "won": "You pick up the key.",
                },
            ],
            "style": [
                {
                    "tag": "dist",
                    "tells": "its distance",
                    "hint": "The reply is the number of rows plus columns away; keep only cells at that distance from every guess.",
                    "feedback": 'return f"$distance {far}.", 0.0, False, False, {}',
                },
                {
                    "tag": "dir",
                    "tells": "the direction",
                    "hint": "Each reply says whether the row and column should go up or down; move that way.",
                    "feedback": 'rows = "higher row" if self.row > r else "lower row" if self.row < r else "right row"\n        cols = "higher column" if self.col > c else "lower column" if self.col < c else "right column"\n        return f"Try a {rows} and a {cols}.", 0.0, False, False, {}',
                },
                {
                    "tag": "warm",
                    "tells": "hot, warm or cold",
                    "hint": "Hot means one step away, warm means two or three; narrow the cells down with each reply.",
                    "feedback": 'word = "hot" if far == 1 else "warm" if far <= 3 else "cold"\n        return f"{word.capitalize()}.", 0.0, False, False, {}',
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "8", "distance": "Distance:"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - 0.15 * far), 2)", "turns": "9", "distance": "Steps away:"},
            ],
        },
    ),
    Family(
        "line_walk",
        SPATIAL,
        LINE_WALK,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "road",
                    "cls": "RoadWalk",
                    "track": "road",
                    "goal": "inn",
                    "plus": "east",
                    "minus": "west",
                    "intro": "A road runs from 0 to 9.",
                    "won": "You reach the inn!",
                    "late": "Night falls before you reach the inn.",
                },
                {
                    "tag": "lift",
                    "cls": "LiftFloor",
                    "track": "lift shaft",
                    "goal": "floor",
                    "plus": "up",
                    "minus": "down",
                    "intro": "The lift serves floors 0 to 9.",
                    "won": "Ding! Right floor.",
                    "late": "The lift is switched off.",
                },
                {
                    "tag": "shelf",
                    "cls": "ShelfSlide",
                    "track": "shelf",
                    "goal": "book",
                    "plus": "right",
                    "minus": "left",
                    "intro": "Your hand slides along a shelf of 10 slots.",
                    "won": "You grab the book.",
                    "late": "Too slow, the library closes.",
                },
            ],
            "style": [
                {"tag": "pos", "feedback": "You are at {self.pos}."},
                {"tag": "gap", "feedback": "Now {abs(self.goal - self.pos)} away from the $goal."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "6"},
                {"tag": "p", "lose": "round(max(0.0, 0.9 - 0.2 * abs(self.goal - self.pos)), 2)", "turns": "5"},
            ],
        },
    ),
    Family(
        "compass_turn",
        SPATIAL,
        COMPASS_TURN,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "tower",
                    "cls": "FaceTower",
                    "target": "the tower",
                    "intro": "You stand in a field.",
                    "where": "the tower is to the",
                    "won": "You see the tower!",
                },
                {
                    "tag": "ship",
                    "cls": "SteerShip",
                    "target": "the harbour",
                    "intro": "You are the captain.",
                    "where": "the harbour lies",
                    "won": "Harbour ahead!",
                },
                {
                    "tag": "robot",
                    "cls": "RobotHeading",
                    "target": "the charger",
                    "intro": "A robot needs to face its charger.",
                    "where": "the charger is",
                    "won": "Charging.",
                },
            ],
            "style": [
                {"tag": "face", "feedback": "Now you face {DIRS[now]}; turn again from where you started."},
                {"tag": "no", "feedback": "Wrong way. Think clockwise."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {"tag": "p", "lose": "0.4 if (now - self.want) % 2 else 0.0", "turns": "1"},
            ],
        },
    ),
    Family(
        "grid_walk",
        SPATIAL,
        GRID_WALK,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "garden",
                    "cls": "GardenPath",
                    "goal": "gate",
                    "block": "pond",
                    "intro": "A 5 by 5 garden.",
                    "won": "Through the gate!",
                    "late": "The gardener sends you home.",
                },
                {
                    "tag": "mall",
                    "cls": "MallWalk",
                    "goal": "exit",
                    "block": "fountain",
                    "intro": "You are lost in a mall.",
                    "won": "You are outside!",
                    "late": "The mall closes.",
                },
                {
                    "tag": "board",
                    "cls": "BoardPawn",
                    "goal": "crown square",
                    "block": "pit",
                    "intro": "A pawn on a 5 by 5 board.",
                    "won": "The pawn is crowned!",
                    "late": "The pawn is stuck.",
                },
            ],
            "style": [
                {"tag": "at", "first": "east or west", "feedback": "You are at {self.at}."},
                {
                    "tag": "left",
                    "first": "sideways",
                    "feedback": "At {self.at}; the $goal is {abs(self.goal[0] - self.at[0]) + abs(self.goal[1] - self.at[1])} steps away.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "10"},
                {
                    "tag": "p",
                    "lose": "round(0.9 - 0.1 * (abs(self.goal[0] - self.at[0]) + abs(self.goal[1] - self.at[1])), 2)",
                    "turns": "9",
                },
            ],
        },
    ),
    Family(
        "mirror_point",
        SPATIAL,
        MIRROR_POINT,
        {
            "theme": [
                {
                    "tag": "vert",
                    "cls": "MirrorWall",
                    "across": "across a vertical line",
                    "shown": "across the line x={self.m}",
                    "answer": "(2 * self.m - self.x, self.y)",
                    "hint": "Across x=m the x becomes 2*m - x and y stays the same.",
                },
                {
                    "tag": "horiz",
                    "cls": "LakeReflection",
                    "across": "in the surface of a lake",
                    "shown": "in the water line y={self.m}",
                    "answer": "(self.x, 2 * self.m - self.y)",
                    "hint": "Across y=m the y becomes 2*m - y and x stays the same.",
                },
                {
                    "tag": "center",
                    "cls": "SpinHalf",
                    "across": "through a centre point",
                    "shown": "through the point ({self.m}, {self.m})",
                    "answer": "(2 * self.m - self.x, 2 * self.m - self.y)",
                    "hint": "Through (m, m) both coordinates become 2*m minus themselves.",
                },
            ],
            "style": [
                {
                    "tag": "count",
                    "intro": "A mirror puzzle.",
                    "won": "Perfect reflection!",
                    "feedback": "{(got[0] == self.answer[0]) + (got[1] == self.answer[1])} of 2 coordinates are right.",
                },
                {
                    "tag": "which",
                    "intro": "Where is the image?",
                    "won": "Exactly there.",
                    "feedback": "x is {'right' if got[0] == self.answer[0] else 'wrong'}, y is {'right' if got[1] == self.answer[1] else 'wrong'}.",
                },
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "0.3 * ((got[0] == self.answer[0]) + (got[1] == self.answer[1]))", "turns": "2"},
            ],
        },
    ),
    Family(
        "relative_direction",
        SPATIAL,
        RELATIVE_DIRECTION,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "town",
                    "cls": "TownMap",
                    "thing": "building",
                    "names": '["bank", "school", "church", "mill", "market", "bakery"]',
                    "intro": "A small town map.",
                    "won": "Right direction!",
                },
                {
                    "tag": "camp",
                    "cls": "CampSite",
                    "thing": "tent",
                    "names": '["red tent", "blue tent", "green tent", "fire", "well"]',
                    "intro": "At the campsite:",
                    "won": "Yes, that way.",
                },
                {
                    "tag": "stars",
                    "cls": "StarChart",
                    "thing": "star",
                    "names": '["Vega", "Rigel", "Altair", "Deneb", "Sirius"]',
                    "intro": "On a star chart:",
                    "won": "The chart agrees.",
                },
            ],
            "style": [
                {"tag": "no", "feedback": "No. Add up the two steps."},
                {"tag": "eight", "feedback": "Not that way. Use one of the eight compass directions."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {"tag": "p", "lose": "0.3 if choice and choice in self.answer else 0.0", "turns": "2"},
            ],
        },
    ),
]

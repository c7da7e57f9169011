"""Optimization families: the best choice under stated costs, limits or schedules."""

from __future__ import annotations

from spade_async.envlib.mechanics import NUMBER_PARSE, OPTIM, WORD_PARSE, Family

BEST_RATIO = r"""
SKILL = "$skill"
HINT = "Divide each $value by its price and pick the $item with the largest result."
DESCRIPTION = "Pick the $item that gives the most $value per coin."

ITEMS = $items


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            self.offer = {n: (self.rng.randint(2, 9), self.rng.randint(5, 40)) for n in self.rng.sample(ITEMS, 4)}
            ranked = sorted(self.offer, key=lambda n: self.offer[n][1] / self.offer[n][0], reverse=True)
            if self.offer[ranked[0]][1] * self.offer[ranked[1]][0] != self.offer[ranked[1]][1] * self.offer[ranked[0]][0]:
                break
        self.best = ranked[0]
        listing = "; ".join(f"{n}: {p} coins for {v} $value" for n, (p, v) in self.offer.items())
        return f"$intro {listing}. Which gives the most $value per coin? Answer with \\boxed{{$item}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.best:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The best deal was {self.best}.", $lose, True, False, {}
        if choice in self.offer:
            return f"$feedback", 0.0, False, False, {}
        return f"Pick one of: {', '.join(self.offer)}.", 0.0, False, False, {}

    def solution(self):
        return [self.best]
"""

BUDGET_PICK = r"""
SKILL = "$skill"
HINT = "Drop every $item that costs more than the budget, then take the one with the highest $score."
DESCRIPTION = "Choose the $item with the highest $score that the budget allows."

NAMES = $items


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        names = self.rng.sample(NAMES, 5)
        scores = self.rng.sample(range(10, 99), 5)
        self.cost = {n: self.rng.randint(5, 50) for n in names}
        self.score = dict(zip(names, scores))
        self.budget = sorted(self.cost.values())[2]
        self.best = max((n for n in names if self.cost[n] <= self.budget), key=self.score.get)
        rows = ", ".join(f"{n} ({self.cost[n]} coins, $score {self.score[n]})" for n in names)
        return f"$intro Budget: {self.budget} coins. {rows}. Answer with \\boxed{{$item}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.best:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Best choice: {self.best}.", $lose, True, False, {}
        if choice in self.cost and self.cost[choice] > self.budget:
            return "Too expensive for the budget.", 0.0, False, False, {}
        if choice in self.cost:
            return "$feedback", 0.0, False, False, {}
        return "Name one of the listed $plural.", 0.0, False, False, {}

    def solution(self):
        return [self.best]
"""

SHORTEST_ROUTE = r"""
SKILL = "$skill"
HINT = "Add up the legs of every route and take the route with the smallest total."
DESCRIPTION = "Choose the shortest of three $routes, each made of several legs."

ROUTES = $names


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        while True:
            self.legs = {r: [self.rng.randint(2, 15) for _ in range(self.rng.randint(2, 4))] for r in self.rng.sample(ROUTES, 3)}
            totals = sorted(sum(v) for v in self.legs.values())
            if totals[0] < totals[1]:
                break
        self.best = min(self.legs, key=lambda r: sum(self.legs[r]))
        text = " ".join(f"The {r} $route: {' + '.join(map(str, v))} $unit." for r, v in self.legs.items())
        return f"$intro {text} Which is shortest? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if choice == self.best:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The {self.best} $route was shortest.", $lose, True, False, {}
        if choice in self.legs:
            return f"$feedback", 0.0, False, False, {}
        return f"Choose from: {', '.join(self.legs)}.", 0.0, False, False, {}

    def solution(self):
        return [self.best]
"""

PAIR_FILL = r"""
SKILL = "$skill"
HINT = "Check every pair of $things: keep the pairs within the limit and pick the one closest to it."
DESCRIPTION = "Load two $things as close to the limit as possible without going over."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.load = dict(zip("ABCDE", self.rng.sample(range(3, 30), 5)))
        sums = {f"{a} {b}": self.load[a] + self.load[b] for a, b in itertools.combinations("ABCDE", 2)}
        self.limit = self.rng.choice(sorted(sums.values())) + self.rng.randint(0, 3)
        self.top = max(v for v in sums.values() if v <= self.limit)
        self.pick = next(k for k, v in sums.items() if v == self.top)
        listed = ", ".join(f"{k}={v}" for k, v in self.load.items())
        return f"$intro {listed}. Limit: {self.limit}. Answer two letters, like \\boxed{{A C}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        picked = sorted(set(choice.upper().split()))
        if len(picked) != 2 or not all(p in self.load for p in picked):
            return "Name two different letters from A to E.", 0.0, False, self.turn >= self.max_turns, {}
        total = self.load[picked[0]] + self.load[picked[1]]
        if total == self.top:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"Best was {self.pick} with {self.top}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [self.pick]
"""

FREE_HOUR = r"""
SKILL = "$skill"
HINT = "Go through the hours from the earliest; the first hour nobody lists as busy is the answer."
DESCRIPTION = "Find the earliest hour when all three $people are free."


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.first = self.rng.randint(10, 15)
        self.busy = {n: sorted(self.rng.sample(range(9, self.first), min(3, self.first - 9))) for n in $names}
        for h in range(9, self.first):
            if all(h not in b for b in self.busy.values()):
                self.rng.choice(list(self.busy.values())).append(h)
        text = " ".join(f"{n} is busy at {', '.join(map(str, sorted(b)))}." for n, b in self.busy.items())
        return f"$intro Hours run from 9 to 17. {text} Answer the earliest hour with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.first:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"The first free hour was {self.first}.", $lose, True, False, {}
        if any(guess in b for b in self.busy.values()):
            return f"$busy", 0.0, False, False, {}
        return f"$later", 0.0, False, False, {}

    def solution(self):
        return [str(self.first)]
"""

FEWEST_COINS = r"""
SKILL = "$skill"
HINT = "Greedy is not always best with these $coins: try each count of the largest $coin and fill the rest."
DESCRIPTION = "How few $coins make an exact amount?"


class $cls(GameEnv):
    max_turns = $turns

    def reset(self, seed=None):
        self.seed_rng(seed)
        self.values = $values
        self.amount = self.rng.randint(6, 30)
        best = [0] + [99] * self.amount
        for a in range(1, self.amount + 1):
            best[a] = min(best[a - v] + 1 for v in self.values if v <= a)
        self.answer = best[self.amount]
        return f"$intro $Coins come in {', '.join(map(str, self.values))}. What is the fewest $coins that make exactly {self.amount}? Answer with \\boxed{{N}}.", {}

    def step(self, action):
        self.turn += 1
        $parse
        if guess == self.answer:
            return "$won", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It takes {self.answer}.", $lose, True, False, {}
        return f"$feedback", 0.0, False, False, {}

    def solution(self):
        return [str(self.answer)]
"""

FAMILIES = [
    Family(
        "best_ratio",
        OPTIM,
        BEST_RATIO,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "juice",
                    "cls": "JuiceDeal",
                    "item": "drink",
                    "value": "litres",
                    "items": '["apple", "orange", "grape", "mango", "lemon", "berry"]',
                    "intro": "Juice bottles at the market:",
                    "won": "Best deal!",
                },
                {
                    "tag": "fuel",
                    "cls": "FuelStation",
                    "item": "station",
                    "value": "km",
                    "items": '["north", "south", "harbor", "airport", "central"]',
                    "intro": "Fuel buys different ranges at each station:",
                    "won": "Cheapest kilometres!",
                },
                {
                    "tag": "seeds",
                    "cls": "SeedPacks",
                    "item": "pack",
                    "value": "seeds",
                    "items": '["tomato", "bean", "pea", "corn", "carrot", "leek"]',
                    "intro": "Seed packs for your garden:",
                    "won": "Most seeds per coin!",
                },
            ],
            "style": [
                {
                    "tag": "rate",
                    "feedback": "{choice} gives {self.offer[choice][1] / self.offer[choice][0]:.1f} per coin; another gives more.",
                },
                {"tag": "no", "feedback": "Not the best value. Compare again."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {"tag": "p", "lose": "0.4 if choice in self.offer else 0.0", "turns": "2"},
            ],
        },
    ),
    Family(
        "budget_pick",
        OPTIM,
        BUDGET_PICK,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "hire",
                    "cls": "HireWorker",
                    "item": "worker",
                    "plural": "workers",
                    "score": "skill",
                    "intro": "You can hire one worker.",
                    "won": "Great hire!",
                },
                {
                    "tag": "phone",
                    "cls": "PhoneShop",
                    "item": "phone",
                    "plural": "phones",
                    "score": "rating",
                    "intro": "Phones on sale.",
                    "won": "Good purchase!",
                },
                {
                    "tag": "trip",
                    "cls": "TripChoice",
                    "item": "trip",
                    "plural": "trips",
                    "score": "fun",
                    "intro": "Pick one holiday trip.",
                    "won": "What a trip!",
                },
            ],
            "names": [
                {"tag": "n1", "items": '["ava", "ben", "cal", "dee", "eli", "fay"]'},
                {"tag": "n2", "items": '["alpha", "bravo", "delta", "echo", "kilo", "zulu"]'},
            ],
            "style": [
                {"tag": "lo", "feedback": "Affordable, but another option scores higher."},
                {"tag": "sc", "feedback": "{choice} scores {self.score[choice]}; you can do better."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {
                    "tag": "p",
                    "lose": "round(0.9 * self.score.get(choice, 0) / self.score[self.best], 2) if self.cost.get(choice, 99) <= self.budget else 0.0",
                    "turns": "2",
                },
            ],
        },
    ),
    Family(
        "shortest_route",
        OPTIM,
        SHORTEST_ROUTE,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "hike",
                    "cls": "HikeRoute",
                    "route": "trail",
                    "routes": "trails",
                    "unit": "km",
                    "names": '["ridge", "river", "forest", "lake", "meadow"]',
                    "intro": "Three trails lead to the hut.",
                    "won": "You arrive first!",
                },
                {
                    "tag": "post",
                    "cls": "PostRound",
                    "route": "round",
                    "routes": "delivery rounds",
                    "unit": "blocks",
                    "names": '["red", "blue", "green", "yellow", "gray"]',
                    "intro": "The postman can take one of three rounds.",
                    "won": "Letters delivered early!",
                },
                {
                    "tag": "net",
                    "cls": "PacketPath",
                    "route": "path",
                    "routes": "network paths",
                    "unit": "ms",
                    "names": '["alpha", "beta", "gamma", "delta", "omega"]',
                    "intro": "A packet can take one of three paths.",
                    "won": "Lowest latency!",
                },
            ],
            "style": [
                {"tag": "sum", "feedback": "That one totals {sum(self.legs[choice])}; a shorter one exists."},
                {"tag": "no", "feedback": "Not the shortest."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "2"},
                {
                    "tag": "p",
                    "lose": "round(0.9 * sum(self.legs[self.best]) / sum(self.legs[choice]), 2) if choice in self.legs else 0.0",
                    "turns": "2",
                },
            ],
        },
    ),
    Family(
        "pair_fill",
        OPTIM,
        PAIR_FILL,
        {
            "parse": WORD_PARSE,
            "theme": [
                {
                    "tag": "boat",
                    "cls": "BoatLoad",
                    "things": "crates",
                    "intro": "A boat carries two crates; their weights:",
                    "won": "The boat sails full!",
                },
                {
                    "tag": "bag",
                    "cls": "BagPack",
                    "things": "books",
                    "intro": "Two books fit in your bag; their weights:",
                    "won": "Perfectly packed!",
                },
                {
                    "tag": "time",
                    "cls": "ShowSlots",
                    "things": "songs",
                    "intro": "Play two songs within the slot; their lengths:",
                    "won": "The slot is filled just right!",
                },
            ],
            "style": [
                {
                    "tag": "tot",
                    "feedback": "Those make {total}; {'over the limit' if total > self.limit else 'you can get closer'}.",
                },
                {"tag": "no", "feedback": "{'Too heavy.' if total > self.limit else 'Fits, but not the best.'}"},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "4"},
                {"tag": "p", "lose": "round(0.9 * total / self.top, 2) if total <= self.top else 0.0", "turns": "3"},
            ],
        },
    ),
    Family(
        "free_hour",
        OPTIM,
        FREE_HOUR,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "meet",
                    "cls": "MeetingSlot",
                    "people": "colleagues",
                    "names": '["Ann", "Raj", "Liu"]',
                    "intro": "Plan a meeting.",
                    "won": "Meeting booked!",
                },
                {
                    "tag": "band",
                    "cls": "BandPractice",
                    "people": "band members",
                    "names": '["drums", "bass", "voice"]',
                    "intro": "The band needs a practice hour.",
                    "won": "Rock on!",
                },
                {
                    "tag": "lab",
                    "cls": "LabBooking",
                    "people": "labs",
                    "names": '["lab1", "lab2", "lab3"]',
                    "intro": "Three labs must run a test together.",
                    "won": "Test scheduled!",
                },
            ],
            "style": [
                {
                    "tag": "who",
                    "busy": "Someone is busy at {guess}.",
                    "later": "Everyone is free at {guess}, but there is an earlier hour.",
                },
                {"tag": "hl", "busy": "Not free at {guess}.", "later": "{guess} works, but is not the earliest."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {
                    "tag": "p",
                    "lose": "0.5 if not any(guess in b for b in self.busy.values()) and guess > self.first else 0.0",
                    "turns": "3",
                },
            ],
        },
    ),
    Family(
        "fewest_coins",
        OPTIM,
        FEWEST_COINS,
        {
            "parse": NUMBER_PARSE,
            "theme": [
                {
                    "tag": "coins",
                    "cls": "FewestCoins",
                    "coin": "coin",
                    "coins": "coins",
                    "Coins": "Coins",
                    "values": "[1, 3, 4]",
                    "intro": "A strange country's money.",
                },
                {
                    "tag": "stamps",
                    "cls": "StampPostage",
                    "coin": "stamp",
                    "coins": "stamps",
                    "Coins": "Stamps",
                    "values": "[1, 5, 6, 9]",
                    "intro": "Postage must be exact.",
                },
                {
                    "tag": "weights",
                    "cls": "ScaleWeights",
                    "coin": "weight",
                    "coins": "weights",
                    "Coins": "Weights",
                    "values": "[1, 4, 5]",
                    "intro": "Balance a scale with weights.",
                },
            ],
            "style": [
                {
                    "tag": "hl",
                    "won": "Optimal!",
                    "feedback": "No, the fewest is {'more' if guess < self.answer else 'less'} than {guess}.",
                },
                {"tag": "no", "won": "That is the minimum!", "feedback": "{guess} is not the minimum count."},
            ],
            "reward": [
                {"tag": "w", "lose": "0.0", "turns": "3"},
                {"tag": "p", "lose": "0.3 if guess == self.answer + 1 else 0.0", "turns": "3"},
            ],
        },
    ),
]

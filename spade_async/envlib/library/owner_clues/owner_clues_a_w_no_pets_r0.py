SKILL = "Logical Deduction"
HINT = "Each child has exactly one pet. Place the certain clue first, then the 'does not' clue leaves one choice for the others."
DESCRIPTION = "Work out who has which pet from two clues and name the owner asked for."

PEOPLE = ["Ann", "Bob", "Cleo", "Dan", "Eve"]
ITEMS = ["cat", "dog", "fish", "bird", "frog"]


class PetOwners(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        people = self.rng.sample(PEOPLE, 3)
        things = self.rng.sample(ITEMS, 3)
        self.owner = dict(zip(things, people))
        first, second = people[0], people[1]
        wrong = things[2]
        self.asked = self.rng.choice(things)
        clues = f"{first} has the {things[0]}. {second} does not have the {wrong}."
        return f"Three children and three pets. {', '.join(people)} each have one of: {', '.join(sorted(things))}. {clues} Who has the {self.asked}? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.owner[self.asked].lower():
            return "Yes, that is the owner!", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return f"It was {self.owner[self.asked]}.", 0.0, True, False, {}
        return f"No, {choice or 'nobody'} does not have it.", 0.0, False, False, {}

    def solution(self):
        return [self.owner[self.asked]]

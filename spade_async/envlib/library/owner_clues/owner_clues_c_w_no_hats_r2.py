SKILL = "Logical Deduction"
HINT = "Each guest has exactly one hat. Place the certain clue first, then the 'does not' clue leaves one choice for the others."
DESCRIPTION = "Work out who has which hat from two clues and name the owner asked for."

PEOPLE = ["Mia", "Leo", "Ivy", "Tom", "Zoe"]
ITEMS = ["red hat", "top hat", "cap", "beret", "crown"]


class HatParty(GameEnv):
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
        return f"At a party each guest wears a hat. {', '.join(people)} each have one of: {', '.join(sorted(things))}. {clues} Who has the {self.asked}? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        raw = self.parse_action(action)
        choice = raw.strip().lower() if raw else ""
        if choice == self.owner[self.asked].lower():
            return self.finish("Right guest!", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.owner[self.asked]}.", 0.0)
        return self.reply(f"No, {choice or 'nobody'} does not have it.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.owner[self.asked]]

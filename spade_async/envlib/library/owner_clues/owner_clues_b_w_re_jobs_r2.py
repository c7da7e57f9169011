SKILL = "Logical Deduction"
HINT = "Each worker has exactly one job. Place the certain clue first, then the 'does not' clue leaves one choice for the others."
DESCRIPTION = "Work out who has which job from two clues and name the owner asked for."

PEOPLE = ["Ada", "Ben", "Cy", "Dot", "Ed"]
ITEMS = ["baker", "smith", "miller", "tailor", "guard"]


class TownJobs(GameEnv):
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
        return f"Three workers share the town's jobs. {', '.join(people)} each have one of: {', '.join(sorted(things))}. {clues} Who has the {self.asked}? Answer with \\boxed{{name}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        if choice == self.owner[self.asked].lower():
            return self.finish("Correct, the mayor agrees.", 1.0)
        if self.turn >= self.max_turns:
            return self.finish(f"It was {self.owner[self.asked]}.", 0.0)
        return self.reply("Wrong. Read the two clues again.")

    def reply(self, text):
        return text, 0.0, False, self.turn >= self.max_turns, {}

    def finish(self, text, reward):
        return text, reward, True, False, {}

    def solution(self):
        return [self.owner[self.asked]]

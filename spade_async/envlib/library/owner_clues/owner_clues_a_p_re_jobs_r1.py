SKILL = "Logical Deduction"
HINT = "Each worker has exactly one job. Place the certain clue first, then the 'does not' clue leaves one choice for the others."
DESCRIPTION = "Work out who has which job from two clues and name the owner asked for."

PEOPLE = ["Ada", "Ben", "Cy", "Dot", "Ed"]
ITEMS = ["baker", "smith", "miller", "tailor", "guard"]


class TownJobs(GameEnv):
    max_turns = 3

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
        choice = (self.parse_action(action) or "").strip().lower()
        if choice == self.owner[self.asked].lower():
            return self.say("Correct, the mayor agrees.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It was {self.owner[self.asked]}.", 0.2, True)
        return self.say("Wrong. Read the two clues again.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.owner[self.asked]]

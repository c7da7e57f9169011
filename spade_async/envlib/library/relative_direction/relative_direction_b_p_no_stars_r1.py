SKILL = "Spatial Reasoning"
HINT = "Add up the steps: one north and one east make northeast; a north and a south cancel out."
DESCRIPTION = "Combine two relative positions to tell where one star lies from another."

STEP = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}


class StarChart(GameEnv):
    max_turns = 2

    def reset(self, seed=None):
        self.seed_rng(seed)
        a, b, c = self.rng.sample(["Vega", "Rigel", "Altair", "Deneb", "Sirius"], 3)
        one, two = self.rng.sample(sorted(STEP), 2)
        while STEP[one][0] + STEP[two][0] == 0 and STEP[one][1] + STEP[two][1] == 0:
            two = self.rng.choice(sorted(STEP))
        x, y = STEP[one][0] + STEP[two][0], STEP[one][1] + STEP[two][1]
        self.answer = ("north" if y > 0 else "south" if y < 0 else "") + ("east" if x > 0 else "west" if x < 0 else "")
        return f"On a star chart: The {a} is {one} of the {b}. The {b} is {two} of the {c}. In which direction is the {a} from the {c}? Answer like \\boxed{{northwest}}.", {}

    def step(self, action):
        self.turn += 1
        choice = " ".join((self.parse_action(action) or "").lower().split())
        choice = choice.replace("-", "").replace(" ", "")
        if choice == self.answer:
            return self.say("The chart agrees.", 1.0, True)
        if self.turn >= self.max_turns:
            return self.say(f"It is {self.answer}.", 0.3 if choice and choice in self.answer else 0.0, True)
        return self.say("No. Add up the two steps.")

    def say(self, text, reward=0.0, done=False):
        return text, reward, done, not done and self.turn >= self.max_turns, {}

    def solution(self):
        return [self.answer]

SKILL = "Pattern Recognition"
HINT = 'Every instruction is done by one call of the only tool: {"name": "press_button", "arguments": {}}.'
DESCRIPTION = "Press a button three times, one instruction at a time."


class PressButton(ToolUseEnv):
    max_turns = 6
    tools = [
        {"type": "function", "function": {
            "name": "press_button", "description": "Press the button once.",
            "parameters": {"type": "object", "properties": {}}}},
    ]

    def initial_state(self):
        self.color = self.rng.choice(["red", "green", "blue"])
        return {"presses": 0}

    def instructions(self):
        return [f"Press the {self.color} button.", "Press it again.", "Press it one last time."]

    def check(self, index):
        return self.state["presses"] >= index + 1

    def press_button(self):
        self.state["presses"] += 1
        return f"Click. The {self.color} button was pressed {self.state['presses']} time(s)."

    def solution(self):
        return [self.call("press_button") for _ in range(3)]

SKILL = "Spatial Reasoning"
HINT = "Call turn_on with the room named in the instruction, copied exactly, e.g. {\"room\": \"kitchen\"}."
DESCRIPTION = "Turn on the lights of the rooms the user names."


class RoomLights(ToolUseEnv):
    max_turns = 6
    ROOMS = ["kitchen", "garden", "garage", "attic"]
    tools = [
        {"type": "function", "function": {
            "name": "turn_on", "description": "Turn on the light of a room.",
            "parameters": {"type": "object", "properties": {"room": {"type": "string", "enum": ROOMS}},
                           "required": ["room"]}}},
    ]

    def initial_state(self):
        self.order = self.rng.sample(self.ROOMS, 3)
        return {"on": []}

    def instructions(self):
        return [f"Turn on the light in the {room}." for room in self.order]

    def check(self, index):
        return self.order[index] in self.state["on"]

    def turn_on(self, room):
        if room not in self.ROOMS:
            raise ValueError(f"no room {room!r}; rooms: {', '.join(self.ROOMS)}")
        if room not in self.state["on"]:
            self.state["on"].append(room)
        return f"The {room} light is on."

    def solution(self):
        return [self.call("turn_on", room=room) for room in self.order]

SKILL = "Pattern Recognition"
HINT = (
    "get_status lists every room at once. Turn off only the lights that are on, and compare "
    "the temperatures to find the coldest room before changing it."
)
DESCRIPTION = "Control lights and thermostats of a house from a status report."


class SmartHome(ToolUseEnv):
    max_turns = 12
    ROOMS = ["kitchen", "bedroom", "office", "hall", "bathroom"]
    tools = [
        {"type": "function", "function": {
            "name": "get_status", "description": "Every room's light (on/off) and temperature in Celsius.",
            "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {
            "name": "set_light", "description": "Switch a room's light on or off.",
            "parameters": {"type": "object", "properties": {
                "room": {"type": "string", "enum": ROOMS}, "on": {"type": "boolean"}}, "required": ["room", "on"]}}},
        {"type": "function", "function": {
            "name": "set_temperature", "description": "Set a room's thermostat (15-26 C).",
            "parameters": {"type": "object", "properties": {
                "room": {"type": "string", "enum": ROOMS},
                "celsius": {"type": "integer", "minimum": 15, "maximum": 26}}, "required": ["room", "celsius"]}}},
    ]

    def initial_state(self):
        temps = self.rng.sample(range(15, 25), len(self.ROOMS))
        lit = self.rng.sample(self.ROOMS, 2)
        rooms = {r: {"light": r in lit, "celsius": t} for r, t in zip(self.ROOMS, temps)}
        self.coldest = min(self.ROOMS, key=lambda r: rooms[r]["celsius"])
        self.target = self.rng.choice([t for t in range(20, 24) if t != rooms[self.coldest]["celsius"]])
        self.reading = self.rng.choice([r for r in self.ROOMS if r not in lit])
        return {"rooms": rooms}

    def instructions(self):
        return [
            "Turn off every light that is on.",
            f"Set the coldest room to {self.target} degrees.",
            f"Turn the {self.reading} light on, I want to read there.",
        ]

    def check(self, index):
        rooms = self.state["rooms"]
        if index == 0:
            return not any(r["light"] for r in rooms.values())
        if index == 1:
            return rooms[self.coldest]["celsius"] == self.target
        return rooms[self.reading]["light"] and sum(r["light"] for r in rooms.values()) == 1

    def get_status(self):
        return self.state["rooms"]

    def set_light(self, room, on):
        if room not in self.state["rooms"]:
            raise ValueError(f"no room {room!r}")
        self.state["rooms"][room]["light"] = bool(on)
        return f"{room} light {'on' if on else 'off'}"

    def set_temperature(self, room, celsius):
        if room not in self.state["rooms"] or not 15 <= int(celsius) <= 26:
            raise ValueError("unknown room or temperature outside 15-26")
        self.state["rooms"][room]["celsius"] = int(celsius)
        return f"{room} set to {celsius} C"

    def solution(self):
        lit = [r for r in self.ROOMS if self.state["rooms"][r]["light"]]
        return [
            self.call("get_status"),
            *[self.call("set_light", room=r, on=False) for r in lit],
            self.call("set_temperature", room=self.coldest, celsius=self.target),
            self.call("set_light", room=self.reading, on=True),
        ]

SKILL = "Logical Deduction"
HINT = (
    "list_events shows the busy hours of a day. A free hour is one with no event; book the "
    "first free hour in the range the instruction gives, and cancel by the event's id."
)
DESCRIPTION = "Book, cancel and find free slots in a week calendar."


class CalendarBooking(ToolUseEnv):
    max_turns = 10
    DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]
    tools = [
        {"type": "function", "function": {
            "name": "list_events", "description": "Events of one day: id, hour (9-17) and title.",
            "parameters": {"type": "object", "properties": {
                "day": {"type": "string", "enum": DAYS}}, "required": ["day"]}}},
        {"type": "function", "function": {
            "name": "book", "description": "Book a one-hour event; fails if the hour is taken.",
            "parameters": {"type": "object", "properties": {
                "day": {"type": "string", "enum": DAYS}, "hour": {"type": "integer", "minimum": 9, "maximum": 17},
                "title": {"type": "string"}}, "required": ["day", "hour", "title"]}}},
        {"type": "function", "function": {
            "name": "cancel", "description": "Cancel an event by id.",
            "parameters": {"type": "object", "properties": {"event_id": {"type": "integer"}}, "required": ["event_id"]}}},
    ]

    def initial_state(self):
        titles = ["Dentist", "Team sync", "Gym", "Budget review", "Call with Ana", "Code review"]
        events = []
        for i, title in enumerate(titles):
            day = self.rng.choice(self.DAYS)
            hour = self.rng.randint(9, 17)
            if not any(e["day"] == day and e["hour"] == hour for e in events):
                events.append({"id": 100 + i, "day": day, "hour": hour, "title": title})
        self.lunch_day = self.rng.choice(self.DAYS)
        for hour in self.rng.sample([12, 13, 14], 2):  # the lunch day has busy noon hours
            if not any(e["day"] == self.lunch_day and e["hour"] == hour for e in events):
                events.append({"id": 200 + hour, "day": self.lunch_day, "hour": hour, "title": "Blocked"})
        busy = {e["hour"] for e in events if e["day"] == self.lunch_day}
        self.lunch_hour = min(h for h in range(12, 17) if h not in busy)
        # The appointment to cancel is never on the lunch day (cancelling it must not free a lunch hour).
        self.victim = self.rng.choice([e for e in events if e["day"] != self.lunch_day] or [None]) or {
            "id": 99, "day": self.DAYS[(self.DAYS.index(self.lunch_day) + 1) % 5], "hour": 9, "title": "Haircut"}
        if self.victim not in events:
            events.append(self.victim)
        self.standup_day = self.rng.choice(self.DAYS)
        taken = {e["hour"] for e in events if e["day"] == self.standup_day}
        self.standup_hour = self.rng.choice([h for h in range(9, 12) if h not in taken] or [17])
        return {"events": events, "next_id": 300}

    def instructions(self):
        return [
            f"Book 'Standup' on {self.standup_day.title()} at {self.standup_hour}:00.",
            f"Cancel my '{self.victim['title']}' appointment.",
            f"Book 'Lunch' on {self.lunch_day.title()} at the first free hour from 12:00 on.",
        ]

    def _has(self, day, hour, title):
        return any(e["day"] == day and e["hour"] == hour and e["title"].lower() == title for e in self.state["events"])

    def check(self, index):
        if index == 0:
            return self._has(self.standup_day, self.standup_hour, "standup")
        if index == 1:
            return all(e["id"] != self.victim["id"] for e in self.state["events"])
        return self._has(self.lunch_day, self.lunch_hour, "lunch")

    def list_events(self, day):
        return sorted((e for e in self.state["events"] if e["day"] == day), key=lambda e: e["hour"])

    def book(self, day, hour, title):
        if any(e["day"] == day and e["hour"] == int(hour) for e in self.state["events"]):
            raise ValueError(f"{day} {hour}:00 is taken")
        event = {"id": self.state["next_id"], "day": day, "hour": int(hour), "title": str(title)}
        self.state["next_id"] += 1
        self.state["events"].append(event)
        return event

    def cancel(self, event_id):
        before = len(self.state["events"])
        self.state["events"] = [e for e in self.state["events"] if e["id"] != event_id]
        if len(self.state["events"]) == before:
            raise ValueError(f"no event with id {event_id}")
        return f"Cancelled event {event_id}."

    def solution(self):
        return [
            self.call("book", day=self.standup_day, hour=self.standup_hour, title="Standup"),
            self.call("list_events", day=self.victim["day"]),
            self.call("cancel", event_id=self.victim["id"]),
            self.call("list_events", day=self.lunch_day),
            self.call("book", day=self.lunch_day, hour=self.lunch_hour, title="Lunch"),
        ]

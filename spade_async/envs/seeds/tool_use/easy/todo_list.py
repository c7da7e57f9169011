SKILL = "Logical Deduction"
HINT = "Each instruction names one task in quotes: call add_task with exactly that title."
DESCRIPTION = "Add the tasks the user dictates to a to-do list."


class TodoList(ToolUseEnv):
    max_turns = 6
    tools = [
        {"type": "function", "function": {
            "name": "add_task", "description": "Add a task to the to-do list.",
            "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}},
    ]

    def initial_state(self):
        self.wanted = self.rng.sample(["milk", "bread", "eggs", "tea", "rice", "soap"], 3)
        return {"tasks": []}

    def instructions(self):
        return [f"Add the task '{title}' to my list." for title in self.wanted]

    def check(self, index):
        return self.wanted[index] in [t.strip().lower() for t in self.state["tasks"]]

    def add_task(self, title):
        self.state["tasks"].append(str(title))
        return f"Added '{title}'. The list has {len(self.state['tasks'])} task(s)."

    def solution(self):
        return [self.call("add_task", title=title) for title in self.wanted]

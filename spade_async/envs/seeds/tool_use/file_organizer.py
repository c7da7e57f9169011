SKILL = "Spatial Reasoning"
HINT = (
    "list_dir shows what a folder holds. Create the folder before moving files into it, move "
    "each matching file with its full path, and read files to find the one the instruction "
    "describes before deleting it."
)
DESCRIPTION = "Tidy a small file system: make a folder, move logs, delete a file by content."


class FileOrganizer(ToolUseEnv):
    max_turns = 12
    tools = [
        {"type": "function", "function": {
            "name": "list_dir", "description": "Names in a folder (folders end with '/').",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
        {"type": "function", "function": {
            "name": "read_file", "description": "The text of a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
        {"type": "function", "function": {
            "name": "make_dir", "description": "Create a folder at the top level, e.g. /archive.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
        {"type": "function", "function": {
            "name": "move", "description": "Move a file into a folder.",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string"}, "folder": {"type": "string"}}, "required": ["path", "folder"]}}},
        {"type": "function", "function": {
            "name": "delete", "description": "Delete a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
    ]

    def initial_state(self):
        words = ["invoice", "recipe", "poem", "budget", "itinerary", "receipt"]
        self.secret = self.rng.choice(words)
        others = [w for w in words if w != self.secret]
        self.rng.shuffle(others)
        docs = {f"/docs/note{i}.txt": f"This file holds a {w}." for i, w in enumerate([self.secret, *others[:3]])}
        names = list(docs)
        self.rng.shuffle(names)
        docs = {new: docs[old] for new, old in zip(sorted(docs), names)}
        self.target = next(p for p, text in docs.items() if self.secret in text)
        logs = {f"/tmp/{name}.log": "log line" for name in self.rng.sample(["app", "db", "web", "cron", "mail"], 2)}
        files = {**docs, **logs, "/tmp/cache.bin": "0101"}
        self.logs = sorted(logs)
        return {"folders": ["/docs", "/tmp"], "files": files}

    def instructions(self):
        return [
            "Create a folder called /archive.",
            "Move every .log file from /tmp into /archive.",
            f"Delete the file in /docs that holds a {self.secret}.",
        ]

    def check(self, index):
        files = self.state["files"]
        if index == 0:
            return "/archive" in self.state["folders"]
        if index == 1:
            moved = ["/archive/" + p.split("/")[-1] for p in self.logs]
            return all(p in files for p in moved) and not any(p.endswith(".log") for p in files if p.startswith("/tmp/"))
        return self.target not in files and len([p for p in files if p.startswith("/docs/")]) == 3

    def list_dir(self, path):
        path = path.rstrip("/")
        if path not in self.state["folders"] and path != "":
            raise ValueError(f"no folder {path}")
        inside = [p.split("/")[-1] for p in self.state["files"] if p.rsplit("/", 1)[0] == path]
        if path == "":
            inside = [f.strip("/") + "/" for f in self.state["folders"]]
        return sorted(inside)

    def read_file(self, path):
        if path not in self.state["files"]:
            raise ValueError(f"no file {path}")
        return self.state["files"][path]

    def make_dir(self, path):
        path = "/" + path.strip("/")
        if path in self.state["folders"]:
            raise ValueError(f"{path} exists")
        if path.count("/") != 1:
            raise ValueError("only top-level folders, like /archive")
        self.state["folders"].append(path)
        return f"Created {path}"

    def move(self, path, folder):
        folder = "/" + folder.strip("/")
        if path not in self.state["files"]:
            raise ValueError(f"no file {path}")
        if folder not in self.state["folders"]:
            raise ValueError(f"no folder {folder}")
        target = folder + "/" + path.split("/")[-1]
        self.state["files"][target] = self.state["files"].pop(path)
        return f"Moved to {target}"

    def delete(self, path):
        if self.state["files"].pop(path, None) is None:
            raise ValueError(f"no file {path}")
        return f"Deleted {path}"

    def solution(self):
        return [
            self.call("make_dir", path="/archive"),
            self.call("list_dir", path="/tmp"),
            *[self.call("move", path=p, folder="/archive") for p in self.logs],
            self.call("list_dir", path="/docs"),
            self.call("read_file", path=self.target),
            self.call("delete", path=self.target),
        ]

SKILL = "Causal Inference"
HINT = (
    "A book can only be lent when a copy is available: return books first, search by author "
    "to find which titles have free copies, and lend by the book's id."
)
DESCRIPTION = "Run a small library desk: returns, loans and finding an available book."


class LibraryLoans(ToolUseEnv):
    max_turns = 12
    tools = [
        {"type": "function", "function": {
            "name": "search_books", "description": "Books whose title or author contains the query: id, title, author, copies free.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
        {"type": "function", "function": {
            "name": "list_loans", "description": "Book ids a member has on loan.",
            "parameters": {"type": "object", "properties": {"member": {"type": "string"}}, "required": ["member"]}}},
        {"type": "function", "function": {
            "name": "lend", "description": "Lend one copy of a book to a member.",
            "parameters": {"type": "object", "properties": {
                "book_id": {"type": "integer"}, "member": {"type": "string"}}, "required": ["book_id", "member"]}}},
        {"type": "function", "function": {
            "name": "give_back", "description": "Return a book a member has on loan.",
            "parameters": {"type": "object", "properties": {
                "book_id": {"type": "integer"}, "member": {"type": "string"}}, "required": ["book_id", "member"]}}},
    ]
    BOOKS = [("Dune", "Herbert"), ("Emma", "Austen"), ("Persuasion", "Austen"), ("Ulysses", "Joyce"),
             ("Dubliners", "Joyce"), ("Beloved", "Morrison"), ("Jazz", "Morrison")]

    def initial_state(self):
        books = {}
        for i, (title, author) in enumerate(self.BOOKS):
            books[str(10 + i)] = {"title": title, "author": author, "copies": self.rng.randint(1, 2), "out": 0}
        self.member, self.reader = self.rng.sample(["ana", "ben", "chloe", "dev"], 2)
        ids = sorted(books)
        borrowed = self.rng.sample(ids, 2)
        for book_id in borrowed:
            books[book_id]["out"] = books[book_id]["copies"]  # all copies out: only a return frees one
        self.borrowed = sorted(int(b) for b in borrowed)
        self.title_id = int(borrowed[0])
        self.author = self.rng.choice(sorted({a for _, a in self.BOOKS if a != books[borrowed[0]]["author"]}))
        loans = {self.member: list(self.borrowed), self.reader: []}
        return {"books": books, "loans": loans}

    def instructions(self):
        title = self.state["books"][str(self.title_id)]["title"]
        return [
            f"{self.member.title()} is returning every book they have. Check them all in.",
            f"Lend '{title}' to {self.reader.title()}.",
            f"{self.reader.title()} also wants any book by {self.author}. Lend one.",
        ]

    def check(self, index):
        books, loans = self.state["books"], self.state["loans"]
        if index == 0:
            return loans.get(self.member) == []
        if index == 1:
            return self.title_id in loans.get(self.reader, [])
        return any(books[str(b)]["author"] == self.author for b in loans.get(self.reader, []))

    def search_books(self, query):
        q = str(query).lower()
        return [{"id": int(i), "title": b["title"], "author": b["author"], "free": b["copies"] - b["out"]}
                for i, b in sorted(self.state["books"].items()) if q in b["title"].lower() or q in b["author"].lower()]

    def list_loans(self, member):
        return self.state["loans"].get(str(member).lower(), [])

    def lend(self, book_id, member):
        book = self.state["books"].get(str(book_id))
        if book is None:
            raise ValueError(f"no book {book_id}")
        if book["out"] >= book["copies"]:
            raise ValueError(f"no free copy of {book['title']}")
        book["out"] += 1
        self.state["loans"].setdefault(str(member).lower(), []).append(int(book_id))
        return f"Lent {book['title']} to {member}."

    def give_back(self, book_id, member):
        loans = self.state["loans"].get(str(member).lower(), [])
        if int(book_id) not in loans:
            raise ValueError(f"{member} does not have book {book_id}")
        loans.remove(int(book_id))
        self.state["books"][str(book_id)]["out"] -= 1
        return f"{member} returned book {book_id}."

    def solution(self):
        by_author = [int(i) for i, b in sorted(self.state["books"].items())
                     if b["author"] == self.author and (b["copies"] - b["out"] > 0 or int(i) in self.borrowed)]
        return [
            self.call("list_loans", member=self.member),
            *[self.call("give_back", book_id=b, member=self.member) for b in self.borrowed],
            self.call("lend", book_id=self.title_id, member=self.reader),
            self.call("search_books", query=self.author),
            self.call("lend", book_id=by_author[0], member=self.reader),
        ]

SKILL = "Mathematical Reasoning"
HINT = (
    "Transfers and payments change the checking balance. Before the last instruction, call "
    "get_balance for checking and transfer exactly (balance - 100) to savings."
)
DESCRIPTION = "Move money between a checking and a savings account and pay a bill."


class BankTransfers(ToolUseEnv):
    max_turns = 10
    tools = [
        {"type": "function", "function": {
            "name": "get_balance", "description": "Current balance of an account.",
            "parameters": {"type": "object", "properties": {
                "account": {"type": "string", "enum": ["checking", "savings"]}}, "required": ["account"]}}},
        {"type": "function", "function": {
            "name": "transfer", "description": "Move an amount between your own accounts.",
            "parameters": {"type": "object", "properties": {
                "from_account": {"type": "string", "enum": ["checking", "savings"]},
                "to_account": {"type": "string", "enum": ["checking", "savings"]},
                "amount": {"type": "integer", "minimum": 1}},
                "required": ["from_account", "to_account", "amount"]}}},
        {"type": "function", "function": {
            "name": "pay", "description": "Pay a payee from checking.",
            "parameters": {"type": "object", "properties": {
                "payee": {"type": "string"}, "amount": {"type": "integer", "minimum": 1}},
                "required": ["payee", "amount"]}}},
    ]

    def initial_state(self):
        self.move = self.rng.randint(2, 8) * 10
        self.bill = self.rng.randint(2, 4) * 10
        self.payee = self.rng.choice(["Power Co", "Water Works", "City Gas"])
        return {"checking": self.rng.randint(15, 30) * 10, "savings": self.rng.randint(30, 60) * 10, "ledger": []}

    def instructions(self):
        return [
            f"Move {self.move} from savings to checking.",
            f"Pay the {self.payee} bill of {self.bill} from checking.",
            "Now leave exactly 100 in checking: move everything above 100 into savings.",
        ]

    def check(self, index):
        ledger = self.state["ledger"]
        if index == 0:
            return ["transfer", "savings", "checking", self.move] in ledger
        if index == 1:
            return ["pay", self.payee, self.bill] in ledger
        return self.state["checking"] == 100 and any(e[:3] == ["transfer", "checking", "savings"] for e in ledger)

    def get_balance(self, account):
        return {"account": account, "balance": self.state[account]}

    def transfer(self, from_account, to_account, amount):
        if from_account == to_account or to_account not in ("checking", "savings"):
            raise ValueError("transfer between checking and savings")
        if not 0 < int(amount) <= self.state[from_account]:
            raise ValueError(f"amount must be between 1 and the {from_account} balance")
        self.state[from_account] -= int(amount)
        self.state[to_account] += int(amount)
        self.state["ledger"].append(["transfer", from_account, to_account, int(amount)])
        return {"checking": self.state["checking"], "savings": self.state["savings"]}

    def pay(self, payee, amount):
        if not 0 < int(amount) <= self.state["checking"]:
            raise ValueError("not enough money in checking")
        self.state["checking"] -= int(amount)
        self.state["ledger"].append(["pay", payee, int(amount)])
        return f"Paid {amount} to {payee}. Checking: {self.state['checking']}"

    def solution(self):
        rest = self.state["checking"] + self.move - self.bill - 100
        return [
            self.call("transfer", from_account="savings", to_account="checking", amount=self.move),
            self.call("pay", payee=self.payee, amount=self.bill),
            self.call("get_balance", account="checking"),
            self.call("transfer", from_account="checking", to_account="savings", amount=rest),
        ]

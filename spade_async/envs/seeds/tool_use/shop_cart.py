SKILL = "Optimization"
HINT = (
    "Call list_items first: it shows every price. For the second instruction pick the lowest "
    "price among the items of that category, and check out only once the cart is complete."
)
DESCRIPTION = "Fill a shopping cart within a budget and check out."


class ShopCart(ToolUseEnv):
    max_turns = 10
    tools = [
        {"type": "function", "function": {
            "name": "list_items", "description": "All items with category, price and stock.",
            "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {
            "name": "add_to_cart", "description": "Put some units of an item in the cart.",
            "parameters": {"type": "object", "properties": {
                "item": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1, "maximum": 5}},
                "required": ["item", "quantity"]}}},
        {"type": "function", "function": {
            "name": "remove_from_cart", "description": "Take an item out of the cart.",
            "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}},
        {"type": "function", "function": {
            "name": "checkout", "description": "Buy everything in the cart; returns the total.",
            "parameters": {"type": "object", "properties": {}}}},
    ]
    CATALOG = {"fruit": ["apple", "banana", "cherry", "mango"], "snack": ["chips", "cookies", "nuts", "pretzels"]}

    def initial_state(self):
        items = {}
        for category, names in sorted(self.CATALOG.items()):
            prices = self.rng.sample(range(2, 15), len(names))
            for name, price in zip(names, prices):
                items[name] = {"category": category, "price": price, "stock": self.rng.randint(3, 9)}
        self.first = self.rng.choice(self.CATALOG["fruit"])
        self.category = "snack"
        self.cheapest = min(self.CATALOG["snack"], key=lambda n: items[n]["price"])
        self.budget = 2 * items[self.first]["price"] + items[self.cheapest]["price"]
        return {"items": items, "cart": {}, "orders": []}

    def instructions(self):
        return [
            f"Put 2 {self.first} in my cart.",
            f"Add one unit of the cheapest {self.category} to the cart.",
            f"Check out. The total must be exactly {self.budget}.",
        ]

    def check(self, index):
        cart, orders = self.state["cart"], self.state["orders"]
        if index == 0:
            return cart.get(self.first) == 2
        if index == 1:
            return cart.get(self.cheapest) == 1
        return any(o["total"] == self.budget for o in orders)

    def list_items(self):
        return self.state["items"]

    def add_to_cart(self, item, quantity):
        entry = self.state["items"].get(item)
        if entry is None:
            raise ValueError(f"no item {item!r}")
        if self.state["cart"].get(item, 0) + int(quantity) > entry["stock"]:
            raise ValueError(f"only {entry['stock']} {item} in stock")
        self.state["cart"][item] = self.state["cart"].get(item, 0) + int(quantity)
        return {"cart": self.state["cart"]}

    def remove_from_cart(self, item):
        if self.state["cart"].pop(item, None) is None:
            raise ValueError(f"{item!r} is not in the cart")
        return {"cart": self.state["cart"]}

    def checkout(self):
        cart = self.state["cart"]
        if not cart:
            raise ValueError("the cart is empty")
        total = sum(self.state["items"][n]["price"] * q for n, q in cart.items())
        self.state["orders"].append({"items": dict(cart), "total": total})
        self.state["cart"] = {}
        return {"order": len(self.state["orders"]), "total": total}

    def solution(self):
        return [
            self.call("add_to_cart", item=self.first, quantity=2),
            self.call("list_items"),
            self.call("add_to_cart", item=self.cheapest, quantity=1),
            self.call("checkout"),
        ]

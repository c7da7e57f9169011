"""What generated environment code must meet: the contract, tool calls and their schemas, and
the hand-written seed environments."""

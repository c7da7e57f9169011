"""The Reasoning Agent's side of self-play: multi-turn episodes in games and tool use."""

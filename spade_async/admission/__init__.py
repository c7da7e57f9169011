"""What an environment must prove before it is played: validation in the sandbox (games and
tool use), and the play audit that replays admission's promise during training.

Policy, not mechanism: the sandbox (below) runs code safely; this layer decides what counts
as a working environment."""

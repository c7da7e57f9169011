"""The controller side of running untrusted environment code: the pool, the fork server, the
channel and its reply bounds, the isolation probe; interface.py names what everything above uses."""

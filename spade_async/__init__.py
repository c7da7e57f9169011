"""spade-async: SPADE self-play (a policy that designs environments and plays them) on one box."""

__version__ = "0.1.0"

"""spade-async: SPADE self-play (a policy that designs environments and plays them) on one box."""

import os as _os

# Any torch.cuda.is_available() in this process (ours, transformers', peft's) must count GPUs
# through NVML, not by initialising CUDA: vLLM forks its engine process, and a fork after
# CUDA initialisation fails ("Cannot re-initialize CUDA in forked subprocess"). Torch reads
# the variable on every call, so setting it here, before any such call, is enough.
_os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

# A vLLM EngineCore (spawned; it imports this package through the trainer's __main__) leaves
# the trainer's process group, so a terminal's Ctrl-C reaches only the run. See engine/session.py.
if _os.environ.get("SPADE_ASYNC_ENGINE_PARENT"):
    from spade_async.engine.session import detach_engine_child as _detach

    _detach()

__version__ = "0.1.0"

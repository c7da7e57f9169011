"""Experiment-tracking sinks for step metrics: TensorBoard, trackio (local), W&B.

Why behind ``log.backends``: the run's SQLite file is always written (the TUI, resume and
``report`` read it); these sinks copy the same figures to the tools people already watch,
under slash-namespaced names (:mod:`spade_async.tracking.names`) that group into panels.
"""

"""One run's lifecycle: assembling the parts (assemble, stages), the pipeline that drives each step
through their owners (plays, audits, scoring, publisher, step_log), and the checkpointer that owns
the run's checkpoints (checkpoint is one folder's format; retention the adapters' disk budget).
The top layer of the library: nothing below imports it."""

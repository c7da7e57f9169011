"""One run's lifecycle: assembling the parts, the pipeline (producer and consumer), atomic
checkpoints and adapter retention. The top layer of the library: nothing below imports it."""

"""The GPU-side analyses: per-GPU groups of a multi-GPU run, per-box findings of a run
over several GPU boxes, kernel captures, and
what XSched's queues showed while a slow request was open. Pure."""

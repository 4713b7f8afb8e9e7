"""The GPU-side analyses: per-GPU groups of a multi-GPU run, kernel captures, and
what XSched's queues showed while a slow request was open. Pure."""

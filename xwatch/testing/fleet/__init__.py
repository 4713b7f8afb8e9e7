"""The fleet's test parts (``--ray``): ``cluster``, a real local Ray cluster of CPU boxes
in a loopback-only network namespace; ``paced``, a paced synthetic workload whose
latencies are drawn, not spent on a core. Used by the fleet's tests and its speed
benchmark."""

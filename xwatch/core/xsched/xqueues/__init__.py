"""XSched's XQueues as xwatch sees them while a phase runs: ``/xqueues`` polled on a
thread of its own (``polling``: the answers, their counts, the pace, outages), and the
workloads' evidence those polls and their output lines are gathered into on the event
loop (``evidence``)."""

"""The measuring engine: the workload process (worker/), its argv and env (launch),
the event protocol, process supervision, the live session (live/), the snapshot
types it freezes into (snapshot) and its streaming statistics."""

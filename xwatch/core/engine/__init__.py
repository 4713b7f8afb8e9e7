"""The measuring engine: the workload process (worker/), its argv and env (launch),
the event protocol, process supervision, the session and its streaming statistics."""

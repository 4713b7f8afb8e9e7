"""The live run: a session, its phases and their workload runs, fed by the supervisor
on the event loop's thread; each freezes into the types of ``engine.snapshot``."""

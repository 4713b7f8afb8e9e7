"""Pure computations on snapshots that several users need (reports, plans, the UI):
the session time axis, the sweep frontier, which phases and workloads a comparison
is about."""

"""Pure computations on snapshots that several users need (reports, plans, the UI):
the session time axis, the sweep frontier, which phases and workloads a comparison
is about, calibrate and the verdict; the statistics of runs and races (stats/) and
the GPU-side analyses (gpu/) in their own folders."""

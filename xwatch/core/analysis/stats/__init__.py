"""The statistics of runs and races: percentile intervals, what a run can resolve,
the run as the unit, pooled runs, noise floors and the sequential race that advise
runs. Pure; reads snapshots, never the GPU-side records."""

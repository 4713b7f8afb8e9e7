"""Questions about a scheduler itself, each kept with the results it produced
(docs/benchmarks.md#layout)."""

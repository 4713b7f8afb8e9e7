"""The report's sections, by theme; each a function of the snapshot that gives a
``Section`` (or None when the snapshot has nothing for it, or a list of them).
``export.report.build_report`` composes them in the report's order.

``session``: the scenario, environment, phases, failures and how to reproduce;
``workloads``: each workload's numbers, the trade-off, the objective;
``modes``: each phase's isolation;
``gpu``: per GPU, kernel captures;
``answers``: the advice, the answer box and the sweep's;
``capacity``: ``xwatch capacity``'s brackets, shares and loads.

Each mode's own sections (its evidence, and XSched's calibration and tail
attribution) live in its package (``Mode.report_sections``).
"""

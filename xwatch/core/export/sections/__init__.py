"""The report's sections, by theme; each a function of the snapshot that gives a
``Section`` (or None when the snapshot has nothing for it, or a list of them).
``export.report.build_report`` composes them in the report's order.

``session``: the scenario, environment, phases, failures and how to reproduce;
``workloads``: each workload's numbers, the trade-off, the objective;
``modes``: the XSched and MPS evidence and each phase's isolation;
``gpu``: per GPU, kernel captures, tail attribution;
``answers``: the advice, the answer box, calibrate's and the sweep's;
``capacity``: ``xwatch capacity``'s brackets, shares and loads.
"""

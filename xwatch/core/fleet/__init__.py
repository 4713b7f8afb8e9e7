"""The fleet: compare, advise, capacity and noise over the boxes of a Ray cluster
(``--ray ADDRESS|auto``, ``docs/fleet.md``).

Each Ray node with GPUs (or with the custom resource ``xwatch_box``: a CPU box) is a
box. A box agent, a Ray actor pinned to its node, runs phases there with the local
runner's own code (``agent.BoxSession``, one ``Driver.step`` a phase) and owns what it
starts (``guard``); the command's process places each round's runs over the boxes
(``place``), runs them side by side (``plan``) and merges every box's phases into one
snapshot whose phases name their box (``merge``). Ray itself is imported only through
``connect.import_ray``: nothing here imports it at module level.
"""

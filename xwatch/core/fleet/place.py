"""Where each run of a fleet plan goes (pure): a batch's runs over the boxes, rotated
every batch as a Latin square, so that no run is tied to one box and every box meets
every step; a run whose mode a box refused goes to the next box in the rotation that
runs it. Within a box, the GPUs are placed as on one box (``plans.box``).

Box and GPU are thereby blocks: over k batches of k runs each step meets each box once,
so a box's own speed is spread over every step, and each phase records its box
(``Phase.box``) and GPU. The statistics remove each block's level before comparing
(``analysis.stats.blocks``: an additive model, setting + block, which also takes the
unbalanced designs a lost box or a partial round leaves)."""

from __future__ import annotations

from collections.abc import Sequence


def place(modes: Sequence[frozenset[str]], refused: Sequence[frozenset[str]], batch: int
          ) -> tuple[list[list[int]], list[int]]:
    """Batch ``batch``'s runs (each by the modes it needs) over the boxes (each by the
    modes it refused): each box's runs, in order, and the runs no box can take. Run
    ``j`` goes to box ``(j + batch) % k``, or the next one in that order that runs its
    modes."""
    k = len(refused)
    queues: list[list[int]] = [[] for _ in range(k)]
    nowhere: list[int] = []
    for j, need in enumerate(modes):
        for step in range(k):
            b = (j + batch + step) % k
            if not need & refused[b]:
                queues[b].append(j)
                break
        else:
            nowhere.append(j)
    return queues, nowhere


def chunks(n: int, k: int) -> list[range]:
    """``n`` runs in batches of ``k`` (the boxes), in the plan's order."""
    return [range(s, min(n, s + k)) for s in range(0, n, max(1, k))]

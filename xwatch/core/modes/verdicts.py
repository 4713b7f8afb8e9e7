"""What every participation verdict means: one definition each, written once.

A verdict is the word xwatch prints about whether a mode really took part for a
workload (``engaged``, ``no-xqueue``, ``in-mps``, ``clean``, ...). The same word used
to be defined three ways (the glossary, the in-app help, the tutorial). This table is
the one definition: the dashboard's help screen and the report's legends render it,
``docs/glossary.md`` carries it as a generated block (``tools/docs.py``, checked by
``tests/unit/test_docs.py``), and ``tests/unit/test_verdicts.py`` checks that every
status the code can return is here.

Each mode declares its own words (``Mode.verdicts``: XSched's engagement, its preflight
probes and the maps proof of isolation, ``xsched.rules.participation``; MPS's client list
and its preflight, ``mps.participation``); the table is theirs merged in the registry's
order (``WORDS``), a word that several modes print once, in the place its first mode
gives it, with each mode's sources. Each entry names where the verdict comes from
(``source``). ``kind`` says what it proves: the mode's proof (``proof``), the mode took
no part for that workload (``took no part``), the phase cannot go on (``fails the
phase``), a warning, or nothing yet (``not decided``). The words several modes share
without naming one are written here (``PENDING``, ``CRASHED``, ``HUNG``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

ISOLATION = "isolation"
#: what a verdict says about the mode (``Word.kind``)
PROOF, NO_PART, FAILS, WARNING, OPEN = ("proof", "took no part", "fails the phase",
                                        "warning", "not decided")


@dataclass(frozen=True)
class Word:
    """One verdict word, where it comes from, what it proves, what it means (a mode that
    prints a word another mode defines declares it with its sources and ``means`` "")."""

    word: str
    sources: tuple[str, ...]
    kind: str
    means: str

    def by(self, *sources: str) -> Word:
        """This word as printed by ``sources``."""
        return dataclasses.replace(self, sources=sources)


#: the words several modes print, without naming one
PENDING = Word("pending", (), OPEN,
               "Not decided yet: no request yet, too few polls, or, at a phase's end, too "
               "little GPU work to expect its XQueues to be seen ready (a longer phase "
               "decides).")
CRASHED = Word("crashed", (), FAILS,
               "The preflight probe died before its work was done; the exit status and the "
               "cause line are named. The phase fails before any model loads.")
HUNG = Word("hung", (), FAILS,
            "The probe gave no result within its time limit and was killed; the phase fails.")


def merged(lists: Iterable[Iterable[Word]]) -> tuple[Word, ...]:
    """The modes' words as one table: each list in turn, a word already there keeping its
    place (the next new words follow it) and gaining the list's sources, its meaning the
    one declaration that gives it."""
    out: list[Word] = []
    for words in lists:
        at = 0
        for w in words:
            i = next((k for k, x in enumerate(out) if x.word == w.word), None)
            if i is None:
                out.insert(at, w)
                at += 1
                continue
            old = out[i]
            out[i] = dataclasses.replace(
                old, sources=(*old.sources, *(s for s in w.sources if s not in old.sources)),
                means=old.means or w.means)
            at = i + 1
    return tuple(out)


def _table() -> tuple[tuple[Word, ...], dict[str, Word], str]:
    from xwatch.core.modes import registry

    declared = [(m.label, registry.load_ref(m.verdicts)) for m in registry.modes()
                if m.verdicts is not None]
    words = merged(ws for _, ws in declared)
    none = [(label, [w.word for w in ws if w.kind == NO_PART and ISOLATION not in w.sources])
            for label, ws in declared]
    none = [(label, ws) for label, ws in none if ws]
    took = (
        "A mode took no part for a workload when its verdict says the mechanism never "
        "handled its work: " + "; ".join(f"under {label} {_either(ws)}" for label, ws in none)
        + ". The answer then gives that mode no effect verdict: it reads \"no verdict: "
        f"{none[0][0] if none else 'the mode'} took no part: ...\" and names each such "
        "workload and why, and --fail-if exits 3.")
    return words, {w.word: w for w in words}, took


def _either(words: list[str]) -> str:
    """``a, b or c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


if TYPE_CHECKING:
    #: every verdict, the modes' words merged (``merged``)
    WORDS: tuple[Word, ...]
    BY_WORD: dict[str, Word]
    #: the concept the answer uses when a mode's workloads did not take part
    TOOK_NO_PART: str


def __getattr__(name: str) -> Any:
    """``WORDS``, ``BY_WORD`` and ``TOOK_NO_PART``, made of the registered modes' words
    when first asked for."""
    at = {"WORDS": 0, "BY_WORD": 1, "TOOK_NO_PART": 2}.get(name)
    if at is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _table()[at]


def meaning(word: str) -> str:
    """The definition of ``word`` (a KeyError for a word not in the table)."""
    return _table()[1][word].means


def took_no_part(word: str) -> bool:
    """Whether ``word`` proves the mode never handled the workload's work."""
    w = _table()[1].get(word)
    return w is not None and w.kind == NO_PART and ISOLATION not in w.sources


def legend(words: Iterable[str]) -> str:
    """'word: meaning' for each distinct known word of ``words``, in the table's order
    (a report section's legend: only the verdicts it shows)."""
    seen = set(words)
    return " ".join(f"'{w.word}': {w.means}" for w in _table()[0] if w.word in seen)


def markdown() -> str:
    """Every verdict as a Markdown list (the help screen and the glossary)."""
    return "\n".join(f"- **`{w.word}`** ({', '.join(w.sources)}; {w.kind}): {w.means}"
                     for w in _table()[0])

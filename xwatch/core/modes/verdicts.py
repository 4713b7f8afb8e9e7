"""What every participation verdict means: one definition each, written once.

A verdict is the word xwatch prints about whether a mode really took part for a
workload (``engaged``, ``no-xqueue``, ``in-mps``, ``clean``, ...). The same word used
to be defined three ways (the glossary, the in-app help, the tutorial). This table is
the one definition: the dashboard's help screen and the report's legends render it,
``docs/glossary.md`` carries it as a generated block (``tools/docs.py``, checked by
``tests/unit/test_docs.py``), and ``tests/unit/test_verdicts.py`` checks that every
status the code can return is here.

Each entry names where the verdict comes from (``source``): the XSched engagement of
a running workload (``xsched.engagement.engagement``), an XSched preflight probe
(``xsched.engagement.probe_verdict``), the MPS client list or its preflight
(``mps.controller``), or the process-maps proof of isolation
(``modes.isolation.verdict``). ``kind`` says what it proves: the mode's proof (``proof``), the mode
took no part for that workload (``took no part``), the phase cannot go on (``fails the
phase``), a warning, or nothing yet (``not decided``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ENGAGEMENT = "XSched engagement"
PROBE = "XSched preflight"
MPS_CLIENT = "MPS"
ISOLATION = "isolation"
#: what a verdict says about the mode (``Word.kind``)
PROOF, NO_PART, FAILS, WARNING, OPEN = ("proof", "took no part", "fails the phase",
                                        "warning", "not decided")


@dataclass(frozen=True)
class Word:
    """One verdict word, where it comes from, what it proves, what it means."""

    word: str
    sources: tuple[str, ...]
    kind: str
    means: str


WORDS: tuple[Word, ...] = (
    Word("engaged", (ENGAGEMENT, PROBE), PROOF,
         "XSched scheduled this workload's GPU work: the XSched shim is loaded in its "
         "process, xserver lists XQueues of that process (for a server, of its process "
         "tree), and once it completed requests those XQueues were seen ready in "
         "xserver's polls. A preflight probe is engaged when its XQueues were ready in at "
         "least 3 polls and 2% of them."),
    Word("not-scheduled", (ENGAGEMENT, PROBE), NO_PART,
         "XSched did not schedule it: requests completed (or a probe's iterations ran) while "
         "its XQueues were never seen ready, or xserver listed none for a server that served "
         "with the shim loaded. Usual cause: GPU work on the default stream, which XSched's "
         "automatic XQueues do not intercept. In the preflight it fails the phase."),
    Word("no-xqueue", (ENGAGEMENT,), NO_PART,
         "The workload ran under XSched but xserver never listed an XQueue for its process: "
         "the shim never saw its GPU work (a library the shim does not intercept, or no GPU "
         "work at all)."),
    Word("shim-not-loaded", (ENGAGEMENT, PROBE), NO_PART,
         "The XSched shim is not in the process: its memory map (/proc/PID/maps) has no "
         "shim, or the shim logged no scheduler line and xserver saw no XQueue. The "
         "environment was overridden (LD_PRELOAD, LD_LIBRARY_PATH), or the program loads "
         "the GPU runtime some other way (a static runtime, a launcher of its own)."),
    Word("app-managed", (ENGAGEMENT, PROBE), NO_PART,
         "The shim reported 'using app-managed scheduler': no cross-process priority, "
         "because XSCHED_SCHEDULER is not GLB in the workload's environment."),
    Word("local", (ENGAGEMENT, PROBE), WARNING,
         "The shim reported a local scheduler: priorities apply only inside this process, "
         "not between workloads (an XSCHED_POLICY of the workload's own)."),
    Word("pending", (ENGAGEMENT, MPS_CLIENT), OPEN,
         "Not decided yet: no request yet, too few polls, or, at a phase's end, too little "
         "GPU work to expect its XQueues to be seen ready (a longer phase decides)."),
    Word("crashed", (PROBE, MPS_CLIENT), FAILS,
         "The preflight probe died before its work was done; the exit status and the cause "
         "line are named. The phase fails before any model loads."),
    Word("crashed-at-exit", (PROBE,), WARNING,
         "The probe ran engaged to its end, said so, and then died while exiting (XSched "
         "1.2's shim, as other scheduled processes exit): a warning, the phase goes on."),
    Word("hung", (PROBE, MPS_CLIENT), FAILS,
         "The probe gave no result within its time limit and was killed; the phase fails."),
    Word("in-mps", (MPS_CLIENT,), PROOF,
         "MPS took part: the workload's process (or one it started) is in the client list "
         "of the phase's MPS server."),
    Word("not-in-mps", (MPS_CLIENT,), NO_PART,
         "The workload is not among the MPS server's clients: CUDA ran it without MPS, "
         "silently (a pipe directory of its own, another user, or no CUDA work)."),
    Word("skipped", (MPS_CLIENT,), OPEN,
         "No MPS preflight: no built-in model workload to probe."),
    Word("clean", (ISOLATION,), PROOF,
         "A native or MPS workload's process maps were read and hold no XSched library: "
         "the phase is a clean baseline."),
    Word("shim-mapped", (ISOLATION,), FAILS,
         "An XSched shim is mapped in a native or MPS workload's process: not a clean "
         "baseline, so the phase fails, naming the library and where it came from."),
    Word("shim-loaded", (ISOLATION,), PROOF,
         "Under XSched, the shim is mapped in the workload's process: the first half of "
         "engaged (the XQueues seen ready are the second)."),
    Word("shim-missing", (ISOLATION,), NO_PART,
         "Under XSched, the process maps were read and hold no shim (the engagement then "
         "says shim-not-loaded)."),
    Word("unverified", (ISOLATION, MPS_CLIENT), OPEN,
         "No evidence either way: the process maps or the MPS client list could not be read "
         "(another user's process, or one that exited before it was looked at). Never taken "
         "as proof."),
)

BY_WORD = {w.word: w for w in WORDS}

#: the concept the answer uses when a mode's workloads did not take part
TOOK_NO_PART = (
    "A mode took no part for a workload when its verdict says the mechanism never handled "
    "its work: under XSched not-scheduled, no-xqueue, shim-not-loaded or app-managed; "
    "under MPS not-in-mps. The answer then gives that mode no effect verdict: it reads "
    "\"no verdict: XSched took no part: ...\" and names each such workload and why, and "
    "--fail-if exits 3.")


def meaning(word: str) -> str:
    """The definition of ``word`` (a KeyError for a word not in the table)."""
    return BY_WORD[word].means


def took_no_part(word: str) -> bool:
    """Whether ``word`` proves the mode never handled the workload's work."""
    w = BY_WORD.get(word)
    return w is not None and w.kind == NO_PART and ISOLATION not in w.sources


def legend(words: Iterable[str]) -> str:
    """'word: meaning' for each distinct known word of ``words``, in the table's order
    (a report section's legend: only the verdicts it shows)."""
    seen = set(words)
    return " ".join(f"'{w.word}': {w.means}" for w in WORDS if w.word in seen)


def markdown() -> str:
    """Every verdict as a Markdown list (the help screen and the glossary)."""
    return "\n".join(f"- **`{w.word}`** ({', '.join(w.sources)}; {w.kind}): {w.means}"
                     for w in WORDS)

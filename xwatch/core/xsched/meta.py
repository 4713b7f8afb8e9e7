"""What an XSched install says about itself: its version (``XSchedConfig.cmake``), its
policy numbering (``include/xsched/types.h``), which of those policies its build can
create (the policy classes compiled into ``xserver`` and ``libpreempt.so``), and which
``XSCHED_*`` settings it knows (``include/xsched/protocol/def.h``, else the strings in
its libraries).

XSched renumbered its policies between 1.0.0 (commit 49079bc: HPF 1, HHPF 2, UP 3,
PUP 4, KEDF 5, LAX 6, AWF 7, CHPF 8, CFS 9, MLFQ 10) and 1.2.0 (HPF 1, HHPF 2, CHPF 3,
UP 4, PUP 5, SPUP 6, KEDF 7, LAX 8, AWF 9, CFS 10, MLFQ 11), and xserver's HTTP API
speaks the numbers: a client with the wrong table sets CFS and gets AWF. So the
numbers are always read from the install. Only when its header is missing is a
numbering assumed, from the version, and that is said (``PolicyTable.assumed``).
A listed policy with no compiled class (1.2's SPUP: ``CreatePolicy`` has no case for it,
and xserver aborts with "invalid policy type: 6") is listed as not creatable.
Pure file reading; no process is started.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from xwatch.core.schedulers import SHORT_NAMES, XSERVER

#: the System V message-queue key XSched's shims and xserver meet on by default
#: (``protocol/include/xsched/protocol/def.h``)
XSCHED_CHANNEL_KEY = 1

CONFIG_FILES = ("lib/cmake/XSched/XSchedConfig.cmake", "lib64/cmake/XSched/XSchedConfig.cmake",
                "share/cmake/XSched/XSchedConfig.cmake")
TYPES_H = "include/xsched/types.h"
DEF_H = "include/xsched/protocol/def.h"
#: files whose bytes name the policy classes and settings the build holds
BINARIES = ("bin/xserver", "lib/libpreempt.so", "lib/libshimcuda.so", "lib/libhalcuda.so",
            "lib/libshimhip.so", "lib/libhalhip.so")

#: the numberings of the two releases, used only when an install lacks types.h
_NUMBERING_1_0 = ("HighestPriorityFirst", "HeterogeneousHighestPriorityFirst",
                  "UtilizationPartition", "ProcessUtilizationPartition",
                  "KEarliestDeadlineFirst", "Laxity", "ActiveWindowFirst",
                  "CPUHighestPriorityFirst", "CompletelyFairScheduler",
                  "MultiLevelFeedbackQueue")
_NUMBERING_1_2 = ("HighestPriorityFirst", "HeterogeneousHighestPriorityFirst",
                  "CPUHighestPriorityFirst", "UtilizationPartition",
                  "ProcessUtilizationPartition", "StrictProcessUtilizationPartition",
                  "KEarliestDeadlineFirst", "Laxity", "ActiveWindowFirst",
                  "CompletelyFairScheduler", "MultiLevelFeedbackQueue")

_VERSION_RE = re.compile(r"set\s*\(\s*XSched_VERSION\s+\"?([0-9][0-9A-Za-z.+-]*)\"?\s*\)")
_ENUM_RE = re.compile(r"typedef\s+enum\s*\{(?P<body>[^}]*)\}\s*XPolicyType\s*;", re.S)
_MEMBER_RE = re.compile(r"\bkPolicy(?P<name>[A-Za-z0-9]+)\s*=\s*(?P<num>\d+)")
_ENV_RE = re.compile(r"#define\s+\w+\s+\"(XSCHED_[A-Z0-9_]+)\"")

#: the XSCHED_* settings each release reads (its protocol/def.h and the platform
#: drivers' library variables), for installs that do not ship def.h (``make cuda``
#: installs none: a built library's strings cannot be read back reliably either, the
#: compiler splits them into immediates). Releases between two use the older's.
_SETTINGS_1_0 = frozenset({
    "XSCHED_AUTO_XQUEUE", "XSCHED_AUTO_XQUEUE_LEVEL", "XSCHED_AUTO_XQUEUE_THRESHOLD",
    "XSCHED_AUTO_XQUEUE_BATCH_SIZE", "XSCHED_AUTO_XQUEUE_PRIORITY",
    "XSCHED_AUTO_XQUEUE_UTILIZATION", "XSCHED_AUTO_XQUEUE_TIMESLICE",
    "XSCHED_AUTO_XQUEUE_DEADLINE", "XSCHED_AUTO_XQUEUE_KDEADLINE", "XSCHED_AUTO_XQUEUE_LAXITY",
    "XSCHED_ASCEND_LIB", "XSCHED_CUDA_LIB", "XSCHED_CUDART_LIB", "XSCHED_CUDLA_LIB",
    "XSCHED_HIP_LIB", "XSCHED_LEVELZERO_LIB", "XSCHED_OPENCL_LIB", "XSCHED_VPI_LIB",
    "XSCHED_CUDA_LV3_IMPL", "XSCHED_LEVELZERO_SLICE_CNT", "XSCHED_SCHEDULER", "XSCHED_POLICY",
    "XSCHED_ACL_OP_COMPILER_LIB", "XSCHED_ACL_CBLAS_LIB", "XSCHED_ACL_OP_API_LIB",
    "XSCHED_HIP_COMGR_LIB"})
RELEASE_SETTINGS: Mapping[tuple[int, ...], frozenset[str]] = {
    (1, 0, 0): _SETTINGS_1_0,
    (1, 2, 0): _SETTINGS_1_0 | {
        "XSCHED_COREX_LIB", "XSCHED_COREX_RT_LIB", "XSCHED_CUPTI_LIB",
        "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS", "XSCHED_SCHEDULER_SUSPEND_SYNC_HWQ",
        "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL", "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE",
        "XSCHED_ACL_NNOP_BASE_LIB"},
}


def short_name(enum_name: str) -> str:
    """``HighestPriorityFirst`` -> ``HPF``; an unknown one -> its capitals and digits."""
    return SHORT_NAMES.get(enum_name) or "".join(c for c in enum_name if c.isupper()
                                                 or c.isdigit()) or enum_name.upper()


def parse_version(text: str) -> str | None:
    """``XSched_VERSION`` from an installed ``XSchedConfig.cmake``."""
    m = _VERSION_RE.search(text)
    return m.group(1) if m else None


def parse_policy_enum(text: str) -> dict[str, int]:
    """``XPolicyType`` of a ``types.h``: {enum name without ``kPolicy``: number}, without
    ``Unknown`` and ``Max``. Comments and preprocessor lines are skipped."""
    m = _ENUM_RE.search(text)
    if not m:
        return {}
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", m.group("body"), flags=re.S)
    out = {}
    for mm in _MEMBER_RE.finditer(body):
        name = mm.group("name")
        if name not in ("Unknown", "Max"):
            out[name] = int(mm.group("num"))
    return out


def version_tuple(v: str | None) -> tuple[int, ...]:
    """``"1.2.0"`` -> (1, 2, 0); () when unknown."""
    if not v:
        return ()
    parts = []
    for p in v.split("."):
        digits = re.match(r"\d+", p)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


@dataclass(frozen=True)
class Policy:
    name: str  # short name, as xserver's command line and XSCHED_POLICY take it
    number: int  # as xserver's HTTP API takes and gives it
    enum: str  # the XPolicyType member after kPolicy
    creatable: bool | None  # None: the build's binaries could not tell


@dataclass(frozen=True)
class PolicyTable:
    """An install's policies, in its own numbering."""

    policies: tuple[Policy, ...]
    source: str  # where the numbering came from
    assumed: str = ""  # non-empty: the header was missing; what was assumed and why
    creatable_from: str = ""  # which binaries were read for the policy classes

    def names(self) -> list[str]:
        return [p.name for p in self.policies]

    def usable(self) -> list[str]:
        """The policies this build can create (or may: undetermined ones included)."""
        return [p.name for p in self.policies if p.creatable is not False]

    def by_name(self, name: str) -> Policy | None:
        return next((p for p in self.policies if p.name == name), None)

    def by_number(self, number: int) -> Policy | None:
        return next((p for p in self.policies if p.number == number), None)

    def label(self, number: int) -> str:
        """``10`` -> ``CFS (10)``; an unlisted number says so."""
        p = self.by_number(number)
        return f"{p.name} ({number})" if p else f"#{number} (not in this install's table)"

    def describe(self) -> str:
        parts = []
        for p in self.policies:
            flag = "" if p.creatable is not False else " (listed, cannot be created)"
            parts.append(f"{p.name} {p.number}{flag}")
        return ", ".join(parts)


@dataclass(frozen=True)
class InstallMeta:
    """What one install says about itself (``read_meta``)."""

    root: str
    version: str | None
    version_source: str  # the file it came from, or why there is none
    policies: PolicyTable
    settings: frozenset[str] = field(default_factory=frozenset)  # XSCHED_* it knows
    settings_source: str = ""  # where ``settings`` came from; "" = could not tell
    notes: tuple[str, ...] = ()  # what was missing, and what was assumed

    @property
    def release(self) -> tuple[int, ...]:
        return version_tuple(self.version)

    def features(self) -> list[str]:
        """What this version supports, by XSched's release notes (1.2.0: PyTorch's
        launch forms, CUDA graph capture, per-thread default streams)."""
        v = self.release
        if not v:
            return ["version unknown: features by version not known"]
        if v >= (1, 2):
            return ["CUDA graphs: capture intercepted, a graph runs as one command "
                    "(preempting one needs level 3 with XSCHED_CUDA_LV3_IMPL=TSG)",
                    "per-thread default streams (PTDS/PTSZ)",
                    "PyTorch's launch forms (CUkernel handles, extra buffers, "
                    "cuLaunchKernelEx configs)"]
        return ["CUDA graphs: not intercepted (49079bc crashed a graphed decoder)",
                "per-thread default streams: not intercepted",
                "PyTorch: needs local patches (kernel parameter layout, extra buffers)"]

    def knows(self, var: str) -> bool | None:
        """Whether the install knows the XSCHED_* variable; None: could not tell (no
        def.h and an unknown version, or a variable newer than the newest release
        xwatch knows, on an install newer than that)."""
        if not self.settings_source:
            return None
        if var in self.settings:
            return True
        if self.settings_source == DEF_H:
            return False
        newest = max(RELEASE_SETTINGS)
        if self.release > newest and not any(var in v for v in RELEASE_SETTINGS.values()):
            return None
        return False

    def summary(self) -> str:
        ver = self.version or "unknown version"
        return f"XSched {ver} ({self.version_source}); policies {self.policies.describe()}"


def _read(path: Path, limit: int | None = None) -> bytes | None:
    try:
        with path.open("rb") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError:
        return None


def _class_in(blobs: list[bytes], enum_name: str) -> bool:
    """Whether a policy class ``<enum>Policy`` is compiled in: its length-prefixed name
    (``26UtilizationPartitionPolicy``) in the RTTI strings or mangled symbols, so the
    name inside a longer one (``ProcessUtilizationPartitionPolicy``) does not count."""
    cls = f"{enum_name}Policy"
    pat = re.compile(rb"(?<![0-9])" + str(len(cls)).encode() + cls.encode())
    return any(pat.search(b) for b in blobs)


def read_meta(root: Path | str) -> InstallMeta:
    """Read an install's version, policy numbering and settings (cached per file
    state: a rebuilt install is read again)."""
    root = Path(root)
    stamp = []
    for rel in (*CONFIG_FILES, TYPES_H, DEF_H, *BINARIES):
        try:
            st = (root / rel).stat()
            stamp.append((rel, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    return _read_meta(str(root), tuple(stamp))


@lru_cache(maxsize=16)
def _read_meta(root_s: str, _stamp: tuple[tuple[str, int, int], ...]) -> InstallMeta:
    root = Path(root_s)
    notes: list[str] = []
    version, vsource = None, ""
    for rel in CONFIG_FILES:
        raw = _read(root / rel)
        if raw is not None:
            version = parse_version(raw.decode("utf-8", "replace"))
            vsource = rel if version else f"{rel} (no XSched_VERSION in it)"
            break
    if not vsource:
        vsource = "no XSchedConfig.cmake"
        notes.append(f"{CONFIG_FILES[0]} is missing: the version is unknown")
    blobs = [b for b in (_read(root / rel) for rel in BINARIES) if b]
    read_bins = [rel for rel in BINARIES if (root / rel).is_file()]
    raw_types = _read(root / TYPES_H)
    enum = parse_policy_enum(raw_types.decode("utf-8", "replace")) if raw_types else {}
    assumed = ""
    if enum:
        source = TYPES_H
    else:
        v = version_tuple(version)
        order = _NUMBERING_1_2 if v >= (1, 2) else _NUMBERING_1_0
        which = "1.2.0" if order is _NUMBERING_1_2 else "1.0.0"
        why = f"XSched_VERSION {version}" if version else "no version found"
        what = "is missing" if raw_types is None else "has no XPolicyType enum"
        assumed = f"{TYPES_H} {what}: assumed XSched {which}'s policy numbering ({why})"
        notes.append(assumed)
        enum = {name: k + 1 for k, name in enumerate(order)}
        source = f"assumed ({which})"
    # a build whose binaries name no policy class at all cannot tell (stripped of RTTI)
    any_class = bool(blobs) and any(_class_in(blobs, e) for e in enum)
    if blobs and not any_class:
        notes.append("no policy class found in " + ", ".join(read_bins)
                     + ": which policies this build can create is unknown")
    pols = tuple(Policy(short_name(e), n, e, _class_in(blobs, e) if any_class else None)
                 for e, n in sorted(enum.items(), key=lambda kv: kv[1]))
    table = PolicyTable(pols, source, assumed, ", ".join(read_bins) if any_class else "")
    settings: frozenset[str] = frozenset()
    ssource = ""
    raw_def = _read(root / DEF_H)
    release = version_tuple(version)
    if raw_def is not None:
        settings = frozenset(_ENV_RE.findall(raw_def.decode("utf-8", "replace")))
        ssource = DEF_H
    elif release:
        newest = max((r for r in RELEASE_SETTINGS if r <= release), default=None)
        if newest is not None:
            settings = RELEASE_SETTINGS[newest]
            ssource = f"XSched {'.'.join(map(str, newest))}'s settings (by its version)"
    if not settings:
        ssource = ""
        notes.append("the install's version is unknown and it has no "
                     "include/xsched/protocol/def.h: XSCHED_* settings are not checked")
    return InstallMeta(str(root), version, vsource, table, settings, ssource, tuple(notes))


_CHANNEL_RE = re.compile(rb"#\s*define\s+XSCHED_SERVER_CHANNEL_KEY\s+(0x[0-9A-Fa-f]+|[0-9]+)")


def channel_key(xserver: str | Path | None) -> int:
    """The System V message-queue key through which an install's shims reach its
    xserver (``XSCHED_SERVER_CHANNEL_KEY`` in its ``include/xsched/protocol/def.h``;
    1, XSched's, when the header is missing). ``xserver``: the binary (``bin/xserver``
    of the install) or the install's folder; None: XSched's key."""
    if xserver is None:
        return XSCHED_CHANNEL_KEY
    p = Path(xserver)
    root = p.parent.parent if p.name == XSERVER else p
    raw = _read(root / DEF_H)
    m = _CHANNEL_RE.search(raw) if raw else None
    return int(m.group(1), 0) if m else XSCHED_CHANNEL_KEY

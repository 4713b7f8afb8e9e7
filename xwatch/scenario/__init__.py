"""Scenario files: TOML -> frozen, validated ``Scenario`` / ``Workload`` objects.

Every key a scenario may hold is declared once, in the ``*_KEYS`` tables of
``keys.py``, with its type, default and documentation; validation, the error
messages and the manual's key reference (``xwatch scenarios --keys``,
docs/scenarios.md) all come from them. Unknown keys, wrong types and out-of-range
values are errors that name the file, the key and what is allowed. Nothing here
imports torch or textual.

The package owns nothing itself: it re-exports the public names of its modules but a
mode's own (its key tables and typed settings: import them from ``keys`` and ``model``),
so ``from xwatch.scenario import X`` works for every other X; the loader knows a mode's
tables as ``ModeTable`` declarations (``keys``). ``values`` holds the value
parsers and allowed choices, ``keys`` the key specs and the reference, ``model``
the frozen objects, ``load`` the parsing, validation and loading by name or path.
"""

from __future__ import annotations

from xwatch.scenario.keys import (
    KIND_KEYS,
    KIND_NAMES,
    MODE_TABLES,
    MODE_TOP_TABLES,
    SCENARIO_KEYS,
    SLO_KEYS,
    WORKLOAD_COMMAND_KEYS,
    WORKLOAD_COMMON_KEYS,
    WORKLOAD_MODE_TABLES,
    WORKLOAD_MODEL_KEYS,
    WORKLOAD_SERVER_KEYS,
    Key,
    ModeTable,
    keys_reference_markdown,
)
from xwatch.scenario.load import (
    BUILTIN_DIR,
    DEFAULT_SCENARIO,
    builtin_scenarios,
    did_you_mean,
    load_scenario,
    parse_scenario,
    resolve_path,
)
from xwatch.scenario.model import (
    Scenario,
    Slo,
    Workload,
    pin_env,
)
from xwatch.scenario.values import (
    AMP_MODES,
    ARRIVALS,
    BERT_ARCHS,
    BERT_TASKS,
    DECODE_MODES,
    DEVICE_PLACEHOLDER,
    DTYPES,
    JOIN_XSERVER,
    LV3_IMPLS,
    PLATFORMS,
    POLICIES,
    PORT_AUTO,
    PORT_PLACEHOLDER,
    PRIORITY_NUMBERS,
    SERVER_APIS,
    SERVER_FROM_CLI,
    SETTLED_POLL_MS,
    STDOUTS,
    STREAM_PRIORITIES,
    STREAMS,
    parse_gpus,
)

__all__ = [
    "AMP_MODES", "ARRIVALS", "BERT_ARCHS", "BERT_TASKS", "BUILTIN_DIR", "DECODE_MODES",
    "DEFAULT_SCENARIO", "DEVICE_PLACEHOLDER", "DTYPES", "JOIN_XSERVER", "KIND_KEYS",
    "KIND_NAMES", "LV3_IMPLS", "MODE_TABLES", "MODE_TOP_TABLES", "PLATFORMS", "POLICIES",
    "PORT_AUTO", "PORT_PLACEHOLDER", "PRIORITY_NUMBERS", "SCENARIO_KEYS", "SERVER_APIS",
    "SERVER_FROM_CLI", "SETTLED_POLL_MS", "SLO_KEYS", "STDOUTS", "STREAMS",
    "STREAM_PRIORITIES", "WORKLOAD_COMMAND_KEYS", "WORKLOAD_COMMON_KEYS",
    "WORKLOAD_MODEL_KEYS", "WORKLOAD_MODE_TABLES", "WORKLOAD_SERVER_KEYS", "Key", "ModeTable",
    "Scenario", "Slo", "Workload", "builtin_scenarios", "did_you_mean",
    "keys_reference_markdown", "load_scenario", "parse_gpus", "parse_scenario", "pin_env",
    "resolve_path",
]

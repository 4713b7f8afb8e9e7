"""Loading scenarios: TOML tables -> validated ``Scenario`` objects by the key
tables (unknown keys, wrong types and out-of-range values are titled errors that
name the file, the key and what is allowed), the built-in scenarios, and
``resolve_path`` / ``load_scenario`` by name or path."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from xwatch.core.archs import LLM_ARCHS
from xwatch.errors import ScenarioError
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
    Key,
    ModeTable,
)
from xwatch.scenario.model import Scenario, Slo, Workload
from xwatch.scenario.values import ARRIVALS, PORT_AUTO, PORT_PLACEHOLDER, SERVER_FROM_CLI

BUILTIN_DIR = Path(__file__).parent.parent / "scenarios"
DEFAULT_SCENARIO = "demo"


class _Ctx:
    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, msg: str) -> ScenarioError:
        return ScenarioError(f"{self.path}: {where}: {msg}", title="Invalid scenario")


def _apply(ctx: _Ctx, where: str, table: Mapping[str, Any], keys: tuple[Key, ...],
           allowed_extra: tuple[str, ...] = ()) -> dict[str, Any]:
    by_name = {k.name: k for k in keys}
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        if raw_key in allowed_extra:
            continue
        spec = by_name.get(raw_key)
        if spec is None:
            raise _unknown(ctx, where, raw_key, [*by_name, *allowed_extra])
        try:
            out[raw_key] = spec.check(value) if spec.check else value
        except TypeError as e:
            raise ctx.error(f"{where}.{raw_key}" if where else raw_key,
                            f"expected {e}, got {type(value).__name__} {value!r}")
        except ValueError as e:
            raise ctx.error(f"{where}.{raw_key}" if where else raw_key, f"{value!r} {e}")
    return out


def did_you_mean(word: str, known: list[str] | set[str]) -> str:
    """' (did you mean 'rate'?)' for a near miss, else ''."""
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown(ctx: _Ctx, where: str, key: str, known: list[str] | set[str]) -> ScenarioError:
    return ctx.error(f"{where}.{key}" if where else key,
                     f"unknown key {key!r}{did_you_mean(key, known)}; allowed keys here: "
                     + ", ".join(sorted(known)))



def _mode_table(ctx: _Ctx, where: str, table: ModeTable[Any], raw: Any) -> Any:
    """A mode's table (``[xsched]``; with ``where``, the workload's ``[workload.xsched]``)
    checked into its typed settings."""
    at = f"{where}.{table.name}" if where else table.name
    if not isinstance(raw, dict):
        raise ctx.error(at, f"must be a table [{'workload.' if where else ''}{table.name}]")
    settings = table.settings(**_apply(ctx, at, raw, table.keys))
    problem = table.problem(settings)
    if problem is not None:
        raise ctx.error(f"{at}.{problem[0]}", problem[1])
    return settings


def _workload(ctx: _Ctx, i: int, raw: Any, default_device: str) -> Workload:
    where = f"workload[{i}]"
    if not isinstance(raw, dict):
        raise ctx.error(where, "each [[workload]] must be a table")
    label = raw.get("name")
    if isinstance(label, str):
        where = f"workload[{i}] ({label})"
    kinds = [k for k in KIND_KEYS if k in raw]
    known = {k.name for t in KIND_KEYS.values() for k in WORKLOAD_COMMON_KEYS + t}
    own = WORKLOAD_COMMON_KEYS + (KIND_KEYS[kinds[0]] if len(kinds) == 1 else
                                  WORKLOAD_MODEL_KEYS + WORKLOAD_COMMAND_KEYS)
    for key in raw:  # a typo first: "modle" must not be reported as "no model"
        if key not in known and key not in MODE_TABLES:
            close = did_you_mean(key, known)
            raise ctx.error(f"{where}.{key}", f"unknown key {key!r}{close}; allowed keys here: "
                            + ", ".join(sorted({k.name for k in own} | set(MODE_TABLES))))
    if len(kinds) != 1:
        raise ctx.error(where, "set exactly one of 'model' (built-in), 'command' (external) "
                        "or 'server' (an inference server driven by xwatch's load generator)")
    kind = kinds[0]
    keys = WORKLOAD_COMMON_KEYS + KIND_KEYS[kind]
    wrong = sorted(set(raw) - {k.name for k in keys} - set(MODE_TABLES))
    if wrong:
        raise ctx.error(f"{where}.{wrong[0]}",
                        f"key {wrong[0]!r} does not apply to a {KIND_NAMES[kind]} workload; "
                        "allowed keys here: "
                        + ", ".join(sorted({k.name for k in keys} | set(MODE_TABLES))))
    vals = _apply(ctx, where, raw, keys, allowed_extra=MODE_TABLES)
    for req in ("name", "priority"):
        if req not in vals:
            raise ctx.error(where, f"missing required key {req!r}")
    if vals.get("train") and str(vals.get("model", "")).startswith("llama"):
        raise ctx.error(f"{where}.train", "LLM decoders serve (decode); train a torchvision "
                        "or BERT model as the background work")
    if vals.get("decode", "eager") != "eager" and \
            not str(vals.get("model", "")).startswith("llama"):
        raise ctx.error(f"{where}.decode", "'decode' applies to the LLM decoders ("
                        + ", ".join(LLM_ARCHS) + ")")
    if vals.get("decode") == "graphed" and vals.get("amp", "off") != "off":
        raise ctx.error(f"{where}.decode", "a graphed decode runs in the weights' dtype: set "
                        "dtype = 'bf16' (or 'fp16') instead of amp")
    if vals.get("train") and vals.get("task") == "base":
        raise ctx.error(f"{where}.train", "training needs a loss: BERT task 'classification' "
                        "or 'qa' (task 'base' has no head)")
    if vals.get("amp", "off") != "off" and vals.get("dtype", "fp32") != "fp32":
        raise ctx.error(f"{where}.amp", f"amp autocasts fp32 weights; with dtype "
                        f"{vals['dtype']!r} the model already runs in that precision: set one")
    if "arrival" in vals and "rate" not in vals:
        raise ctx.error(f"{where}.arrival", "'arrival' needs 'rate' (closed loop has no spacing)")
    if vals.get("burstiness", 1.0) != 1.0 and vals.get("arrival") != "gamma":
        raise ctx.error(f"{where}.burstiness", "'burstiness' shapes gamma arrivals: set "
                        "arrival = 'gamma' (allowed: " + ", ".join(ARRIVALS) + ")")
    modes = {t.name: _mode_table(ctx, where, t, raw.get(t.name, {}))
             for t in WORKLOAD_MODE_TABLES}
    if kind in ("model", "server"):
        vals.setdefault("device", default_device)
    if kind != "model":
        vals.setdefault("cwd", str(Path(ctx.path).resolve().parent) if ctx.path[0] != "<" else None)
    if kind == "server" and "rate" not in vals:
        raise ctx.error(f"{where}.rate", "a server workload is driven open loop: set 'rate' "
                        "(requests per second)")
    if kind == "server" and vals.get("port") == PORT_AUTO \
            and tuple(vals["server"]) != (SERVER_FROM_CLI,) \
            and not any(PORT_PLACEHOLDER in a for a in vals["server"]):
        raise ctx.error(f"{where}.port", f"port = \"{PORT_AUTO}\" takes a free port for each "
                        f"copy: put {PORT_PLACEHOLDER} where the server command takes its port "
                        "(e.g. \"--port\", \"{port}\"), or set a fixed port")
    if kind == "server" and "dataset" in vals and vals.get("range_ratio"):
        raise ctx.error(f"{where}.range_ratio", "lengths come from 'dataset': leave out "
                        "'range_ratio' (it draws synthetic lengths)")
    return Workload(**vals, **modes)


def parse_scenario(data: Mapping[str, Any], path: str = "<memory>",
                   default_name: str = "scenario") -> Scenario:
    """Validate already-decoded TOML data into a ``Scenario``."""
    ctx = _Ctx(path)
    top = _apply(ctx, "", data, SCENARIO_KEYS,
                 allowed_extra=("workload", "slo", *(t.name for t in MODE_TOP_TABLES)))
    raw_wls = data.get("workload")
    if not isinstance(raw_wls, list) or not raw_wls:
        raise ctx.error("workload", "needs at least one [[workload]] table")
    device = top.get("device", "auto")
    wls = tuple(_workload(ctx, i, w, device) for i, w in enumerate(raw_wls))
    seen: set[str] = set()
    ports: dict[int | str, str] = {}
    for w in wls:
        if w.name in seen:
            raise ctx.error("workload.name", f"duplicate workload name {w.name!r}")
        seen.add(w.name)
        if w.server is not None and not w.port_auto:
            if w.port in ports:
                raise ctx.error(f"workload ({w.name}).port", f"{w.port} is also the port of "
                                f"the server workload {ports[w.port]}: give each server its "
                                f"own port, or port = \"{PORT_AUTO}\"")
            ports[w.port] = w.name
    slo = None
    if "slo" in data:
        if not isinstance(data["slo"], dict):
            raise ctx.error("slo", "must be a table [slo]")
        s = _apply(ctx, "slo", data["slo"], SLO_KEYS)
        if "latency_ms" not in s:
            raise ctx.error("slo", "missing required key 'latency_ms'")
        target = s.get("workload") or max(wls, key=lambda w: w.priority_value).name
        if target not in seen:
            raise ctx.error("slo.workload", f"{target!r} is not a workload; workloads: "
                            + ", ".join(w.name for w in wls))
        slo = Slo(workload=target, percentile=s.get("percentile", 99.0), latency_ms=s["latency_ms"],
                  metric=s.get("metric", "latency_ms"))
    modes = {t.name: _mode_table(ctx, "", t, data[t.name]) if t.name in data
             else t.settings() for t in MODE_TOP_TABLES}
    return Scenario(
        name=top.get("name", default_name),
        description=top.get("description", ""),
        duration_s=top.get("duration_s", 60.0),
        device=device,
        window_s=top.get("window_s", 10.0),
        workloads=wls,
        slo=slo,
        source=path,
        start_together=top.get("start_together", True),
        **modes,
    ).on_gpus(top.get("gpus", ()))


def builtin_scenarios() -> dict[str, Path]:
    """Shipped scenarios by name."""
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def resolve_path(ref: str) -> Path:
    """A built-in name (``demo``) or a path to a TOML file."""
    builtins = builtin_scenarios()
    if ref in builtins:
        return builtins[ref]
    p = Path(ref)
    if p.suffix == ".toml" or p.exists() or "/" in ref:
        if not p.is_file():
            raise ScenarioError(f"{ref}: no such scenario file", title="Scenario not found")
        return p
    raise ScenarioError(
        f"{ref!r} is neither a built-in scenario ({', '.join(builtins)}) nor a .toml file",
        title="Scenario not found")


def load_scenario(ref: str) -> Scenario:
    """Load and validate a scenario by built-in name or path."""
    path = resolve_path(ref)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e}", title="Scenario not found")
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}")
    return parse_scenario(data, str(path), default_name=path.stem)

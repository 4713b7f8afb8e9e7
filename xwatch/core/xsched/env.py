"""The environment XSched mode gives each workload: scheduler, automatic XQueue
and its priority/level/threshold/batch size (scenario overrides, else by priority), and
the reference to its fork support (``fork.REF``)."""

from __future__ import annotations

from xwatch.core.xsched.fork import SUPPORT_VARS
from xwatch.core.xsched.install import XschedInstall
from xwatch.scenario import Workload

#: (priority, level, threshold, batch_size) as in XSched's upstream example.
DEFAULTS = {"high": (1, 1, 16, 8), "low": (0, 1, 4, 2)}


def queue_params(w: Workload) -> dict[str, int]:
    """Priority/level/threshold/batch size: scenario overrides, else by priority."""
    high = w.priority == "high" or (isinstance(w.priority, int) and w.priority > 0)
    dp, dl, dt, db = DEFAULTS["high" if high else "low"]
    x = w.xsched
    prio = x.priority if x.priority is not None else (
        w.priority if isinstance(w.priority, int) else dp)
    return {"priority": prio, "level": x.level if x.level is not None else dl,
            "threshold": x.threshold if x.threshold is not None else dt,
            "batch_size": x.batch_size if x.batch_size is not None else db}


def xsched_env(w: Workload, install: XschedInstall, platform: str) -> dict[str, str]:
    """The environment XSched mode adds for workload ``w``."""
    q = queue_params(w)
    env = {
        "XSCHED_SCHEDULER": "GLB",
        "XSCHED_AUTO_XQUEUE": "ON",
        "XSCHED_AUTO_XQUEUE_PRIORITY": str(q["priority"]),
        "XSCHED_AUTO_XQUEUE_LEVEL": str(q["level"]),
        "XSCHED_AUTO_XQUEUE_THRESHOLD": str(q["threshold"]),
        "XSCHED_AUTO_XQUEUE_BATCH_SIZE": str(q["batch_size"]),
        "LD_LIBRARY_PATH": str(install.lib),
        **SUPPORT_VARS,  # its fork support, for the fork server and the worker (``fork``)
    }
    env.update(settings_env(w))
    if platform == "hip":
        env["LD_PRELOAD"] = str(install.shim("hip"))
    env.update(w.xsched.env)
    return env


#: [workload.xsched] keys that are XSched settings of their own, and their variables
SETTING_VARS = {
    "lv3_impl": "XSCHED_CUDA_LV3_IMPL",
    "single_stream": "XSCHED_CUDA_SINGLE_STREAM_PER_PROCESS",
    "suspend_sync_hwq": "XSCHED_SCHEDULER_SUSPEND_SYNC_HWQ",
    "suspend_wait_all": "XSCHED_SCHEDULER_SUSPEND_WAIT_ALL",
    "suspend_wait_idle": "XSCHED_SCHEDULER_SUSPEND_WAIT_IDLE",
}


def settings_env(w: Workload) -> dict[str, str]:
    """The variables of the settings a scenario set for ``w`` (booleans as ON/OFF)."""
    out = {}
    for key, var in SETTING_VARS.items():
        v = getattr(w.xsched, key)
        if v is not None:
            out[var] = ("ON" if v else "OFF") if isinstance(v, bool) else str(v)
    return out

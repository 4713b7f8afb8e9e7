"""Live control (modal forms): XSched's priority hint, XQueue config and policy; MPS's
active thread percentage.

Each is a mode's control screen (``Mode.control_screen``), made from the workloads'
names and the backend's ``Controls`` (its words too: the title, the note). The screen
only collects and validates input; it returns a ``modes.contract.Control`` and the app
has the backend perform it off the UI thread, showing its answer.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from xwatch.core.modes.contract import Control, Controls
from xwatch.scenario import POLICIES


def _int(value: str, what: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{what} must be an integer (got {value!r})")


class ControlScreen(ModalScreen[Control | None]):
    """XSched live control: a workload's priority hint, its XQueues' config, the
    policy (a mode's control screen: made from the workloads' names and the backend's
    ``Controls``)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, workloads: list[str], controls: Controls) -> None:
        super().__init__()
        self.workloads = workloads
        self.title_text = controls.title
        policy = self.policy = controls.policy or "HPF"
        policies = controls.policies
        #: the install's own policies that its build can create (XSched renumbered and
        #: added policies between releases; the controller reads them from the install)
        self.policies = policies or list(POLICIES)
        if policy not in self.policies:
            self.policies.insert(0, policy)

    def compose(self) -> ComposeResult:
        with Vertical(id="control-box"):
            yield Label(self.title_text, classes="title")
            yield Select([(w, w) for w in self.workloads], value=self.workloads[0],
                         allow_blank=False, id="wl")
            with Horizontal():
                yield Input(placeholder="priority", id="priority")
                yield Button("Set priority", id="do-priority")
            with Horizontal():
                yield Input(placeholder="threshold", id="threshold")
                yield Input(placeholder="batch size", id="batch")
                yield Input(placeholder="level 1-3", id="level")
                yield Button("Apply config", id="do-config")
            with Horizontal():
                yield Select([(p, p) for p in self.policies], value=self.policy,
                             allow_blank=False, id="policy")
                yield Button("Set policy", id="do-policy")
            yield Label("", id="control-error")

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        wl = str(self.query_one("#wl", Select).value)
        try:
            if event.button.id == "do-priority":
                prio = _int(self.query_one("#priority", Input).value, "priority")
                if prio is None or not -255 <= prio <= 255:
                    raise ValueError("priority must be an integer from -255 to 255")
                self.dismiss(Control("priority", wl, {"priority": prio}))
            elif event.button.id == "do-config":
                th = _int(self.query_one("#threshold", Input).value, "threshold")
                bs = _int(self.query_one("#batch", Input).value, "batch size")
                lv = _int(self.query_one("#level", Input).value, "level")
                if th is None and bs is None and lv is None:
                    raise ValueError("give a threshold, a batch size or a level")
                self.dismiss(Control("config", wl, {"level": lv, "threshold": th,
                                                    "batch_size": bs}))
            elif event.button.id == "do-policy":
                self.dismiss(Control("policy", values={
                    "policy": str(self.query_one("#policy", Select).value)}))
        except ValueError as e:
            self.query_one("#control-error", Label).update(f"[red]{e}[/]")


class MpsControlScreen(ModalScreen[Control | None]):
    """MPS live control: what MPS lets change while clients run (the share of SMs for
    new work on the server); the per-client settings need a restart, and say so."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, workloads: list[str], controls: Controls) -> None:
        super().__init__()
        self.controls = controls

    def compose(self) -> ComposeResult:
        with Vertical(id="control-box"):
            yield Label(self.controls.title, classes="title")
            with Horizontal():
                yield Input(placeholder="active thread % 1-100", id="pct")
                yield Button("Set on the server", id="do-pct")
            yield Label(self.controls.note, id="control-note")
            yield Label("", id="control-error")

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        try:
            pct = _int(self.query_one("#pct", Input).value, "active thread percentage")
            if pct is None or not 1 <= pct <= 100:
                raise ValueError("active thread percentage must be an integer from 1 to 100")
            self.dismiss(Control("threads", values={"percentage": pct}))
        except ValueError as e:
            self.query_one("#control-error", Label).update(f"[red]{e}[/]")

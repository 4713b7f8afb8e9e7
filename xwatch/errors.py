"""The error hierarchy: every error a user can cause has a title and a message
that says what to do. The CLI prints them as a panel and exits 2; the app shows
them as notifications or modals. Nothing here imports textual or torch."""

from __future__ import annotations


class XwatchError(Exception):
    """Base class. ``title`` is a short heading, ``str(self)`` the full message."""

    title = "xwatch error"

    def __init__(self, message: str, title: str | None = None) -> None:
        super().__init__(message)
        if title is not None:
            self.title = title

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class ScenarioError(XwatchError):
    """A scenario file is missing, unreadable, or has a bad key or value."""

    title = "Invalid scenario"


class SnapshotError(XwatchError):
    """A snapshot file is missing, corrupt or of an unknown schema."""

    title = "Invalid snapshot"


class ModeError(XwatchError):
    """A scheduling mode cannot run: not configured, or its daemon would not start."""

    title = "Mode unavailable"


class TelemetryError(XwatchError):
    """A telemetry backend was asked for explicitly and cannot run."""

    title = "Telemetry unavailable"


class UsageError(XwatchError):
    """Bad command-line arguments."""

    title = "Bad arguments"

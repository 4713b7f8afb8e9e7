"""What is kept of a workload's output stream: its first lines and its last, and how
many fell between them. A tail alone loses what a process says as it starts (a server's
model and port) once it writes more than the tail holds at its end: the tracebacks of
requests cut when the phase stops, of which a busy machine leaves more. Pure."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

TAIL = 40  # the last lines of a stream kept
HEAD = 10  # and its first lines, beside them


class HeadTail:
    """A stream's first ``head`` lines and its last ``tail``; iterating gives the tail."""

    def __init__(self, tail: int, head: int = HEAD) -> None:
        self.tail: deque[str] = deque(maxlen=tail)
        self._head: list[str] = []
        self._size = head
        self.count = 0  # lines written

    def append(self, line: str) -> None:
        self.tail.append(line)
        self.count += 1
        if len(self._head) < self._size:
            self._head.append(line)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tail)

    def __len__(self) -> int:
        return len(self.tail)

    def head(self) -> list[str]:
        """The first lines that are no longer in the tail (none while it holds them all)."""
        return self._head[:max(0, self.count - len(self.tail))]

    def skipped(self) -> int:
        """How many lines fell between the head and the tail, kept in neither."""
        return max(0, self.count - len(self.tail) - self._size)

"""One overall deadline, on the monotonic clock.

A deadline is fixed once and only read afterwards: nothing the server sends
(keepalives, 304s, events) can extend it, and a wall-clock change cannot move
it either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypeAlias

__all__ = ["Deadline", "DeadlineLike"]


@dataclass(frozen=True)
class Deadline:
    """An instant on :func:`time.monotonic`'s clock."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline ``seconds`` from now."""
        return cls(time.monotonic() + float(seconds))

    @classmethod
    def of(cls, value: DeadlineLike) -> Deadline:
        """A :class:`Deadline` from a deadline, a number of seconds from now,
        or an aware :class:`datetime` (converted once, now, to the monotonic clock)."""
        if isinstance(value, Deadline):
            return value
        if isinstance(value, datetime):
            when = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
            return cls.after((when - datetime.now(timezone.utc)).total_seconds())
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"a deadline is a Deadline, seconds or a datetime, not {type(value).__name__}")
        return cls.after(float(value))

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def earlier(self, other: Deadline) -> Deadline:
        return self if self.at <= other.at else other


DeadlineLike: TypeAlias = Deadline | float | int | datetime

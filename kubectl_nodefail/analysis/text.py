"""Small wording helpers shared by the analysis and the renderer."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """Human duration the way kubectl's AGE column reads: 45s, 3m12s, 2h5m, 3d4h."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    minutes, s = divmod(s, 60)
    if minutes < 60:
        return f"{minutes}m{s}s" if minutes < 10 and s else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def ago(seconds: float) -> str:
    if seconds < 0:
        return f"in {duration(-seconds)}"
    return f"{duration(seconds)} ago"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"

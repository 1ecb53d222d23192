"""Known limits: wrong predictions the audit does not count against the diagnosis, each with the
reason the API cannot show what would be needed to get it right. One table, documented in
docs/audit.md; a row needs a reason a reviewer can check, never "flaky".

A row: (claim kind, a predicate on the verdict, the reason).
"""

from __future__ import annotations

from collections.abc import Callable

from tests.audit.judge import Verdict

KNOWN_LIMITS: list[tuple[str, Callable[[Verdict], bool], str]] = []


def known_limit(verdict: Verdict) -> str:
    """The reason a wrong verdict is a known limit, or "" when it counts as wrong."""
    for kind, matches, reason in KNOWN_LIMITS:
        if verdict.kind == kind and matches(verdict):
            return reason
    return ""

"""The operator's attestation that a node's machine is powered off: how suggestions show it,
and the one check of what the operator typed.

The attestation is the gate in front of every destructive step (the out-of-service taint, a
force delete, deleting the Node): if it is wrong, the node's pods run twice. So it is typed by a
human who checked the machine, never handed to them ready to paste. Every suggestion shows the
flag with PLACEHOLDER, which cannot be pasted and work: unquoted, the shell reads `<` and `>` as
redirections and refuses the line (no such file, or a syntax error at the end of the line);
quoted, remediate rejects it with one line (`check_typed`), since `<` is not allowed in a node
name. Suggested commands never carry `--confirm` either: typing it is the human's act.
"""

from __future__ import annotations

import re

FLAG = "--node-shutdown-confirmed"
PLACEHOLDER = "<NODE-YOU-VERIFIED-IS-POWERED-OFF>"
# What a destructive step risks if the attestation is wrong: the machine still runs.
IF_STILL_RUNNING = "two copies of its pods run at once"
# The same for a pod nothing recreates (a bare pod): no second copy starts by itself.
IF_STILL_RUNNING_BARE = "its containers keep running there, unseen, beside any copy re-created"
# The same for a pod whose replacement already exists: forcing starts no copy, but the old one
# keeps running there, unseen, beside it.
IF_STILL_RUNNING_REPLACED = "it keeps running there, unseen, beside its replacement"

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
NODE_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")


def flag() -> str:
    """The attestation as suggestions show it: the flag and the placeholder to replace."""
    return f"{FLAG} {PLACEHOLDER}"


def check_typed(names: tuple[str, ...] | list[str]) -> str | None:
    """Why the typed attestations cannot be used (one line), or None."""
    for name in names:
        if "NODE-YOU-VERIFIED" in name.upper():  # also with its brackets dropped
            return (
                f"{FLAG} {PLACEHOLDER} is the placeholder from a suggestion: check that the "
                "node's machine is powered off (console, power state, cloud instance state), "
                "then type that node's name in its place"
            )
        if len(name) > 253 or not NODE_NAME.match(name):
            return f"{FLAG} {name!r}: not a node name"
    return None

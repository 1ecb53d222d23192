"""What each exit code means, and which commands can exit with it: the one table the --help
texts are made from (the top-level help lists every code once; each command, its own).

The codes themselves are errors.Exit; the README's table says the same (tests/unit/
test_exit_codes.py holds the three together, and each command's list to this table).
"""

from __future__ import annotations

import textwrap
from typing import NamedTuple

from kubectl_nodefail.common.errors import Exit

COMMANDS = ("diagnose", "remediate", "dump", "version", "rbac", "completion")
CLUSTER_READERS = ("diagnose", "remediate", "dump")


class Code(NamedTuple):
    exit: Exit
    meaning: str
    commands: tuple[str, ...] = COMMANDS  # the commands that can exit with it
    own: tuple[tuple[str, str], ...] = ()  # (command, its own wording) in its --help


TABLE: tuple[Code, ...] = (
    Code(
        Exit.OK,
        "nothing wrong (diagnose), every change done, waits listed, or, as a plan, runnable "
        "(remediate), done (the others)",
        own=(
            ("diagnose", "nothing wrong"),
            ("remediate", "every change done, waits listed (or, as a plan, runnable)"),
            ("dump", "the dump was written"),
            ("version", "printed (also when the server cannot be reached: it says why)"),
            ("rbac", "printed"),
            ("completion", "printed"),
        ),
    ),
    Code(Exit.PROBLEMS_FOUND, "problems found", ("diagnose",)),
    Code(Exit.PARTIAL, "some steps refused, skipped or failed", ("remediate",)),
    Code(Exit.NOTHING_TO_DO, "nothing to do", ("remediate",)),
    Code(
        Exit.INTERRUPTED,
        "interrupted by SIGINT/SIGTERM: the table lists what was done and what was not "
        "started; re-run the same command to finish",
        ("remediate",),
    ),
    Code(
        Exit.UNCONFIRMED,
        "with --confirm, a step was accepted but its effect was not observed within "
        "--wait-timeout (pods still there: the result names what holds them)",
        ("remediate",),
    ),
    Code(
        Exit.USAGE,
        "usage error (also an output path, or standard output, that cannot be written, an "
        "--explain name not found)",
        own=(
            (
                "remediate",
                "usage error (also an attestation that is not a node name or still the "
                "placeholder, a --plan-out or --log-file that cannot be written)",
            ),
            ("dump", "usage error (also a --file that cannot be written)"),
            ("version", "usage error"),
            ("rbac", "usage error"),
            ("completion", "usage error (a shell it has no script for)"),
        ),
    ),
    Code(
        Exit.CONFIG,
        "no kubeconfig, unknown context, or an unusable kubeconfig (YAML, server URL, "
        "certificate data)",
        CLUSTER_READERS,
    ),
    Code(
        Exit.UNREACHABLE,
        "API server unreachable or timing out (--request-timeout, --deadline)",
        CLUSTER_READERS,
    ),
    Code(
        Exit.AUTH,
        "credentials rejected or a required read forbidden, or a credential plugin failed "
        "(nothing is sent then)",
        CLUSTER_READERS,
        own=(
            (
                "remediate",
                "credentials rejected, a required read forbidden, --confirm's RBAC preflight "
                "failed (missing permissions: nothing is changed), or a credential plugin failed",
            ),
        ),
    ),
    Code(
        Exit.BAD_INPUT,
        "malformed or unreadable dump (--from-file) or plan file (--plan-in)",
        ("diagnose", "remediate"),
    ),
    Code(
        Exit.API,
        "any other API error (5xx, throttled past the deadline, malformed answers)",
        CLUSTER_READERS,
    ),
    Code(
        Exit.PLAN_MISMATCH,
        "a saved plan (--plan-in) made for another context, server or cluster, or for a node "
        "recreated since: refused before any change",
        ("remediate",),
    ),
    Code(Exit.NOT_FOUND, "a node named on the command line does not exist", CLUSTER_READERS),
    Code(
        Exit.ATTESTATION_CONTRADICTED,
        "an attestation (--node-shutdown-confirmed) the cluster contradicts: the node is Ready, "
        "or its kubelet renewed its lease after the failure began; refused before any change",
        ("remediate",),
    ),
    Code(
        Exit.CTRL_C,
        "interrupted by Ctrl-C (remediate's interruptions are 6)",
        ("diagnose", "dump"),
        own=(("diagnose", "interrupted by Ctrl-C"), ("dump", "interrupted by Ctrl-C")),
    ),
    Code(Exit.INTERNAL, "a bug (rerun with -v for the traceback)"),
)


def codes_for(command: str) -> list[Code]:
    """The codes `command` can exit with, in the table's order."""
    return [code for code in TABLE if command in code.commands]


def help_text(command: str | None = None) -> str:
    """The `Exit codes:` block of a --help: every code, each naming the commands it is for
    unless it is for all (command None, the top-level help), or just one command's."""
    rows = TABLE if command is None else codes_for(command)
    lines = ["", "\b", "Exit codes:"]
    for code in rows:
        meaning = dict(code.own).get(command or "", code.meaning)
        if command is None and code.commands != COMMANDS:
            meaning = f"{', '.join(code.commands)}: {meaning}"
        wrapped = textwrap.wrap(meaning, width=84, break_on_hyphens=False)
        lines.append(f"  {int(code.exit):<4} {wrapped[0]}")
        lines += [f"       {more}" for more in wrapped[1:]]
    return "\n".join(lines) + "\n"

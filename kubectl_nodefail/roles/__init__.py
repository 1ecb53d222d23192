"""The least-privilege ClusterRoles, shipped inside the plugin (`kubectl nodefail rbac` prints
them): diagnose.yaml (read-only: diagnose, dump, remediate's plan) and remediate.yaml (the writes
of remediate --confirm, bound together with the first).

These files are the source; deploy/rbac/ in the repository is a copy a unit test holds equal
(tests/unit/cli/test_rbac.py). Read through importlib.resources, so they load from the krew
zipapp and the wheel alike."""

from __future__ import annotations

from importlib import resources

ROLES = ("diagnose", "remediate")
# What each command's user needs: remediate --confirm reads as diagnose does, then writes.
NEEDED = {"diagnose": ("diagnose",), "remediate": ("diagnose", "remediate")}


def text(role: str) -> str:
    """One role's YAML document, comments included."""
    if role not in ROLES:
        raise ValueError(f"no role {role!r}")
    return resources.files(__name__).joinpath(f"{role}.yaml").read_text(encoding="utf-8")


def for_command(command: str | None) -> str:
    """The roles a command needs (None: all), as one multi-document YAML stream."""
    roles = NEEDED[command] if command else ROLES
    return "---\n".join(text(role) for role in roles)

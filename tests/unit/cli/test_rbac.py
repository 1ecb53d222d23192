"""`kubectl nodefail rbac`: the least-privilege roles from the package (what the krew archive
and the wheel ship), the same files as deploy/rbac/, and the permission hints name the command.
(tests/e2e/test_remediate.py applies the printed roles to a real control plane and is refused
with them; tests/e2e/test_release.py finds them in the zipapp and the wheel.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_nodefail import roles
from kubectl_nodefail.cli.main import main

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "rbac"


def test_deploy_rbac_is_a_copy_of_the_packaged_roles() -> None:
    assert sorted(p.stem for p in DEPLOY.glob("*.yaml")) == sorted(roles.ROLES)
    for role in roles.ROLES:
        assert (DEPLOY / f"{role}.yaml").read_text() == roles.text(role), (
            f"deploy/rbac/{role}.yaml differs from kubectl_nodefail/roles/{role}.yaml "
            "(the source): copy it over"
        )


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ([], ["kubectl-nodefail-diagnose", "kubectl-nodefail-remediate"]),
        (["diagnose"], ["kubectl-nodefail-diagnose"]),
        (["remediate"], ["kubectl-nodefail-diagnose", "kubectl-nodefail-remediate"]),
    ],
)
def test_rbac_prints_the_roles_a_command_needs_as_yaml(args: list[str], names: list[str]) -> None:
    result = CliRunner().invoke(main, ["rbac", *args])
    assert result.exit_code == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in docs] == ["ClusterRole"] * len(names)
    assert [d["metadata"]["name"] for d in docs] == names
    assert all(d["rules"] for d in docs)
    assert "deploy/rbac" not in result.stdout


def test_an_unknown_role_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["rbac", "admin"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_no_hint_points_at_a_repository_path() -> None:
    """The krew archive ships no deploy/ folder: every permission hint names the command."""
    package = Path(roles.__file__).resolve().parents[1]
    for source in package.rglob("*.py"):
        if source != Path(roles.__file__).resolve():  # its docstring names the copy
            assert "deploy/rbac" not in source.read_text(), source
    for role in roles.ROLES:
        assert "deploy/" not in roles.text(role)

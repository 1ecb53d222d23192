"""Suggested commands carry the connection flags the user gave (pastable.py, issue 36 item 1):
shell-quoted, right after the subcommand, never a token; on every action of a recorded
diagnosis, whatever the names (the shell reads back exactly the words that were meant)."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.cluster.kubeconfig import Overrides
from kubectl_nodefail.render import pastable
from tests.unit.conftest import load

WORDS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(
    lambda s: s.strip() == s and s != ""
)


def test_the_flags_given_in_kubectls_order_and_never_a_token() -> None:
    overrides = Overrides(
        cluster="c",
        user="u",
        server="https://x:6443",
        token="s3cret",
        impersonate="alice",
        impersonate_groups=("g1", "g2"),
        certificate_authority="ca.pem",
        insecure_skip_tls_verify=True,
    )
    args = pastable.connection_args("/k/config", "prod", overrides)
    assert args == [
        "--kubeconfig", "/k/config", "--context", "prod", "--cluster", "c", "--user", "u",
        "--server", "https://x:6443", "--as", "alice", "--certificate-authority", "ca.pem",
        "--as-group", "g1", "--as-group", "g2", "--insecure-skip-tls-verify",
    ]  # fmt: skip
    assert "s3cret" not in " ".join(args)
    assert pastable.connection_args(None, None, None) == []


def test_only_commands_of_ours_or_kubectls_are_changed() -> None:
    args = ["--context", "prod"]
    assert pastable.carrying("kubectl nodefail remediate n1 --strategy x", args) == (
        "kubectl nodefail remediate --context prod n1 --strategy x"
    )
    assert pastable.carrying("kubectl describe node n1", args) == (
        "kubectl --context prod describe node n1"
    )
    assert pastable.carrying("journalctl -u kubelet", args) == "journalctl -u kubelet"
    assert pastable.carrying("", args) == ""
    assert pastable.carrying("kubectl get pods", []) == "kubectl get pods"


@given(kubeconfig=WORDS, context=WORDS, group=WORDS)
def test_the_shell_reads_back_the_words_meant(kubeconfig: str, context: str, group: str) -> None:
    args = pastable.connection_args(kubeconfig, context, Overrides(impersonate_groups=(group,)))
    pasted = pastable.carrying("kubectl nodefail remediate flaky-a --strategy delete-node", args)
    assert shlex.split(pasted) == [
        "kubectl", "nodefail", "remediate", *args, "flaky-a", "--strategy", "delete-node",
    ]  # fmt: skip


def test_every_suggestion_of_a_diagnosis_carries_them() -> None:
    snap = load("node-down-after-eviction")
    report = diagnose(snap, snap.captured_at)
    args = pastable.connection_args("my config", "prod cluster", None)
    pastable.carry(report, args)
    actions = [n.action for n in report.nodes if n.action] + [p.action for p in report.pods]
    commands = [c for a in actions for c in (a.kubectl, a.remediate) if c]
    assert len(commands) >= 5, commands
    for command in commands:
        words = shlex.split(command)
        at = words.index("--kubeconfig")
        assert words[at : at + 4] == ["--kubeconfig", "my config", "--context", "prod cluster"]

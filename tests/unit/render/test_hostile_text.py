"""Terminal escape injection (issue 38): whatever string a cluster or a dump holds (a waiting
reason, an Event, a condition, an annotation, a taint, a name), the text outputs show it escaped
(kubectl_nodefail/term/printable.py): no C0 control but the outputs' own newlines, no DEL, no C1, no
bidi control or other format character reaches the terminal or a Markdown file; the plugin's
own color still does; JSON and YAML keep the exact value. A real terminal: test_tmux_screen.py.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import tempfile
import unicodedata
from functools import cache
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_nodefail.analysis import outage
from kubectl_nodefail.analysis.diagnose import diagnose
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.cli.main import main
from kubectl_nodefail.common.errors import Exit
from kubectl_nodefail.remediate.plan import Options, make_plan
from kubectl_nodefail.render import incident, render
from kubectl_nodefail.snapshot.model import Snapshot, load_dump
from kubectl_nodefail.term import color, printable
from kubectl_nodefail.watch import watch
from tests.unit.conftest import FIXTURES, attestable

SCALE = int(os.environ.get("NODEFAIL_PROPERTY_SCALE", "1"))
SETTINGS = settings(
    max_examples=12 * SCALE,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ATTACKS = [
    "\x1b]0;pwned\x07",  # OSC: the window title
    "\x1b[2J",  # clear the screen
    "\x1b[32mReady\x1b[0m",  # a fake green Ready
    "Ready\b\b\b\b\bNotReady",  # backspaces over what was printed
    "NotReady\rReady   ",  # carriage return
    "\x9b2J",  # C1 CSI
    "\u202egnp.exe",  # right-to-left override
    "a\u2066b\u2069c\u202a\u202b\u202c\u202d",  # isolates and embeddings
    "zero\u200bwidth\ufeff\u00ad",  # zero-width space, byte-order mark, soft hyphen
    "line\nforged row\ttab\x7fdel\x00nul\x85nel\u2028sep",
]
ATTACK = "".join(ATTACKS)
# the one-liner the issue names, for the tests that look for its escaped form
ESCAPED_TITLE = "\\x1b]0;pwned\\x07"

# The fixtures the property tests inject into: a node failure with every controller, storage,
# finalizers, a zone run (several failed nodes), automation
FIXTURE_NAMES = [
    "node-down-after-eviction",
    "node-down-before-eviction",
    "finalizer-on-healthy-node",
    "large-zone-partial",
    "automation-karpenter-acting",
]
# the dump's string fields the analysis shows (besides names, changed wherever they appear)
SHOWN_KEYS = {"reason", "message", "key", "value", "effect_note", "holderIdentity"}
# The escape sequences the plugin writes itself: color (color.py), the watch's screen (watch.py)
OWN_SGR = re.compile(r"\x1b\[(?:0|1|31|32|33)m")
OWN_SCREEN = re.compile(r"\x1b\[(?:\?1049[hl]|\?25[hl]|H|2J|K|\d+;1H)")
UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def unsafe(text: str) -> list[str]:
    """The characters of `text` that must never reach a terminal (its newlines are allowed)."""
    return [ch for ch in text if ch != "\n" and unicodedata.category(ch) in UNSAFE]


def assert_printable(text: str, what: str) -> None:
    bad = unsafe(text)
    assert not bad, f"{what}: {sorted(set(bad))!r} in {text[:2000]!r}"


@cache
def _doc(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text()


def injected(name: str, value: str) -> dict[str, Any]:
    """The fixture with `value` appended to every name (wherever it appears: references stay
    whole), to every field the analysis shows (SHOWN_KEYS), to every annotation, and one more
    annotation whose key and value are `value`."""
    doc = json.loads(_doc(name))
    names = {
        meta.get(k)
        for item in doc["items"]
        for meta in [item.get("metadata") or {}]
        for k in ("name", "namespace")
    } - {None, ""}

    def walk(v: Any, key: str | None = None) -> Any:
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k == "annotations" and isinstance(x, dict):
                    out[k] = {a: f"{b}{value}" for a, b in x.items()} | {f"x/{value}": value}
                else:
                    out[k] = walk(x, k)
            return out
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, str) and (v in names or key in SHOWN_KEYS):
            return v + value
        return v

    doc["items"] = walk(doc["items"])
    return doc


def snap_of(doc: dict[str, Any]) -> Snapshot:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dump.json")
        with open(path, "w") as fh:
            json.dump(doc, fh)
        return load_dump(path)


def _fitted_rows(text: str) -> list[str]:
    """The rows of the fitted tables (the node and pod tables: header to the blank line)."""
    rows, inside = [], False
    for line in text.split("\n"):
        if line.startswith(("NODE ", "POD ")):
            inside = True
        elif not line:
            inside = False
        if inside:
            rows.append(line)
    return rows


def text_outputs(snap: Snapshot) -> dict[str, str]:
    """Every text output the diagnosis has, in-process (no color: not a terminal)."""
    report: Report = diagnose(snap, snap.captured_at, timelines=True)
    out = {f"table at {w}": render.table(report, width=w) for w in (None, 40, 80, 120, 200)}
    out["wide"] = render.table(report, wide=True)
    out["wide at 100"] = render.table(report, wide=True, width=100)
    out["outage view"] = render.outage_table(report, outage.summarise(report), 120)
    for n in report.nodes:
        out[f"explain {n.name!r}"] = render.explain_node(n, report, 80) + incident.timeline_text(
            report, n.name
        )
    for p in report.pods:
        out[f"explain {p.name!r}"] = render.explain_pod(p, report.captured_at, 80)
    out["markdown"] = incident.markdown(render.report_data(report), report)
    failed = attestable(report)
    for confirmed in (False, True):
        plan = make_plan(report, Options(attested=failed, max_nodes=len(failed) or 1))
        for w in (None, 60, 120):
            out[f"plan {confirmed} at {w}"] = render.plan_table(plan, confirmed, True, width=w)
    return out


def _check_every_output(clean: Snapshot, evil: Snapshot) -> dict[str, str]:
    outputs = text_outputs(evil)
    for what, text in outputs.items():
        assert_printable(text, what)
    # escaped before the widths were measured: the fitted tables stay within the terminal
    for w in (120, 200):
        rows = _fitted_rows(outputs[f"table at {w}"])
        assert rows and all(len(r) <= w for r in rows), [r for r in rows if len(r) > w]
    # and no value makes a line of its own (into a pipe: one line per row, whatever it says)
    assert outputs["table at None"].count("\n") == text_outputs(clean)["table at None"].count("\n")
    return outputs


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_attack_strings_are_shown_escaped_in_every_text_output(name: str) -> None:
    outputs = _check_every_output(snap_of(json.loads(_doc(name))), snap_of(injected(name, ATTACK)))
    assert ESCAPED_TITLE in outputs["table at None"]
    assert ESCAPED_TITLE + "\\x1b[2J" in outputs["markdown"]


def poisoned(value: Any, attack: str = ATTACK) -> Any:
    """`value` with `attack` appended to every string in it (dataclasses, lists, tuples and
    dicts walked, keys too): whatever field a renderer reads, it reads an attack."""
    if isinstance(value, str):
        return value + attack
    if isinstance(value, (list, tuple)):
        return type(value)(poisoned(v, attack) for v in value)
    if isinstance(value, dict):
        return {poisoned(k, attack): poisoned(v, attack) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value,
            **{
                f.name: poisoned(getattr(value, f.name), attack)
                for f in dataclasses.fields(value)
                if f.init
            },
        )
    return value


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_outage_view_escapes_whatever_field_of_the_report_it_prints(name: str) -> None:
    """The outage view escapes only the report's fields it prints (outageview.PRINTED) and its
    summary: with an attack in every string of both, nothing unsafe is left in its text."""
    snap = snap_of(json.loads(_doc(name)))
    report = diagnose(snap, snap.captured_at)
    report.gaps.append("a gap")
    report.cluster.append("a note")
    report.scope_namespaces.append("team")
    report.scope_nodes.append("node-1")
    text = render.outage_table(poisoned(report), poisoned(outage.summarise(report)), 120)
    assert_printable(text, "outage view")
    assert ESCAPED_TITLE in text


@SETTINGS
@given(name=st.sampled_from(FIXTURE_NAMES), value=st.text(max_size=24) | st.sampled_from(ATTACKS))
def test_any_string_in_any_shown_field_leaves_the_text_outputs_printable(
    name: str, value: str
) -> None:
    _check_every_output(snap_of(json.loads(_doc(name))), snap_of(injected(name, value)))
    # the watch's screen and its change log (a clean read, then the injected one)
    assert_printable(OWN_SCREEN.sub("", OWN_SGR.sub("", _watch(True, value))), "watch")


@SETTINGS
@given(value=st.text())
def test_escape_leaves_only_printable_characters_and_keeps_the_printable_ones(value: str) -> None:
    shown = printable.escape(value)
    assert not unsafe(shown) and "\n" not in shown
    if value.isprintable():
        assert shown == value
    whole = printable.text(value)  # the guard on a whole output: its line breaks kept
    assert not unsafe(whole) and whole.count("\n") == value.count("\n")


def test_the_notation() -> None:
    assert printable.escape("\x1b]0;t\x07\r\n\t\x7f\x9b\u202e\U000e0041é ok") == (
        "\\x1b]0;t\\x07\\r\\n\\t\\x7f\\x9b\\u202e\\U000e0041é ok"
    )


def test_with_color_only_the_plugins_own_styles_reach_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(color, "enabled", lambda *a, **k: True)
    evil = snap_of(injected("node-down-after-eviction", ATTACK))
    report = diagnose(evil, evil.captured_at)
    shown = color.style_for_terminal(render.table(report, width=120))
    assert OWN_SGR.search(shown)  # color is on
    assert_printable(OWN_SGR.sub("", shown), "colored table")
    assert ESCAPED_TITLE in shown


def _watch(tty: bool, value: str = ATTACK) -> str:
    """The watch over a clean read, then an injected one (its change log names the injected
    node and pods), then Ctrl-C: what it wrote to stdout."""
    queue = [
        snap_of(json.loads(_doc("node-down-before-eviction"))),
        snap_of(injected("node-down-after-eviction", value)),
    ]

    def show(snap: Snapshot) -> tuple[str, int]:  # as the CLI's: rendered, then colored
        report = diagnose(snap, snap.captured_at)
        return color.paint(printable.text(render.table(report, width=100)), True), 3

    def stop(_: float) -> None:
        if not queue:
            raise KeyboardInterrupt

    out = io.StringIO()
    watch.run(
        lambda: queue.pop(0),
        show,
        2.0,
        out,
        io.StringIO(),
        tty=tty,
        title="kubectl nodefail diagnose",
        sleep=stop,
        clock=lambda: 1.8e9,
        size=lambda: (100, 200),
    )
    return out.getvalue()


def test_the_watch_screen_and_its_change_log_show_only_escapes() -> None:
    """The screen (the diagnosis, the change log) and the log printed after it: only the
    watch's own sequences and color are escape codes."""
    text = _watch(tty=True)
    assert "CHANGES" in text and ESCAPED_TITLE in text
    log = text.rpartition(watch.LEAVE)[2]  # the change log on the normal screen
    assert log.startswith("Changes seen by the watch") and ESCAPED_TITLE in log, log
    assert_printable(OWN_SCREEN.sub("", OWN_SGR.sub("", text)), "watch")


def test_the_watch_into_a_pipe_shows_only_escapes() -> None:
    text = _watch(tty=False)
    changes = [line for line in text.split("\n") if line.startswith("change: ")]
    assert changes and any(ESCAPED_TITLE in line for line in changes), text
    assert_printable(OWN_SGR.sub("", text), "watch into a pipe")


@pytest.fixture(scope="module")
def evil_dump(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hostile") / "evil.json"
    path.write_text(json.dumps(injected("node-down-after-eviction", ATTACK)))
    return str(path)


NODE = "flaky-a" + ATTACK


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["-o", "wide"],
        ["-v"],
        ["-o", "markdown"],
        ["--explain", NODE],
        ["--explain", "scenario-down" + ATTACK + "/db-0" + ATTACK],
    ],
    ids=["table", "wide", "verbose", "markdown", "explain-node", "explain-pod"],
)
def test_the_cli_text_outputs_and_stderr_are_printable(evil_dump: str, args: list[str]) -> None:
    result = CliRunner().invoke(main, ["diagnose", "--from-file", evil_dump, *args])
    assert result.exit_code == 3, result.output
    assert ESCAPED_TITLE in result.stdout
    assert_printable(result.stdout, "stdout")
    assert_printable(result.stderr, "stderr")


def test_an_error_line_quoting_the_cluster_is_escaped(evil_dump: str) -> None:
    result = CliRunner().invoke(
        main, ["diagnose", "--from-file", evil_dump, "--explain", "flaky" + ATTACK]
    )
    assert result.exit_code == Exit.USAGE, result.output  # a bad option: its documented code
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: --explain flaky")
    assert_printable(result.stderr, "stderr")


def test_remediate_plan_text_is_printable(evil_dump: str) -> None:
    result = CliRunner().invoke(main, ["remediate", "--from-file", evil_dump, "-o", "wide"])
    assert result.exit_code == Exit.PARTIAL, result.output  # the taint refused: no attestation
    assert "REFUSED" in result.stdout and ESCAPED_TITLE in result.stdout
    assert_printable(result.stdout, "plan")
    assert_printable(result.stderr, "stderr")
    # the zone run's plan (zoneview.py), its names escaped too
    zone = ["--zone", "e2e/zone-a", "-o", "wide"]
    result = CliRunner().invoke(main, ["remediate", "--from-file", evil_dump, *zone])
    assert result.exit_code == Exit.PARTIAL, result.output
    assert "Scope: zone e2e/zone-a" in result.stdout and ESCAPED_TITLE in result.stdout
    assert_printable(result.stdout, "zone plan")
    assert_printable(result.stderr, "stderr")
    # an attestation naming the injected node is refused (not a node name), in one line
    attested = ["--node-shutdown-confirmed", NODE]
    result = CliRunner().invoke(main, ["remediate", "--from-file", evil_dump, *attested])
    assert result.exit_code == Exit.USAGE and result.stderr.count("\n") == 1, result.output
    assert_printable(result.stderr, "stderr")


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_json_and_yaml_keep_the_exact_value(evil_dump: str, output: str) -> None:
    result = CliRunner().invoke(main, ["diagnose", "--from-file", evil_dump, "-o", output])
    assert result.exit_code == 3, result.output
    assert result.stdout.isascii()  # escaped as data: \u001b in JSON, "\e" in YAML
    data = json.loads(result.stdout) if output == "json" else yaml.safe_load(result.stdout)
    node = data["nodes"][0]
    assert node["name"] == NODE
    assert node["ready"]["reason"].endswith(ATTACK)
    stuck = {f"{p['namespace']}/{p['name']}" for p in data["pods"]}
    assert f"scenario-down{ATTACK}/db-0{ATTACK}" in stuck


def test_several_contexts_headings_and_error_lines_are_escaped() -> None:
    from kubectl_nodefail.cluster import contexts

    results = [
        contexts.ClusterResult(f"prod{ATTACK}", Exit.UNREACHABLE, error=f"error: no{ATTACK}"),
        contexts.ClusterResult("dev", Exit.OK, text="All 1 node Ready.\n"),
    ]
    text = contexts.render(results, "table")
    assert f"=== context prod{ESCAPED_TITLE}" in text and "=== context dev: nothing wrong" in text
    assert_printable(text, "contexts")

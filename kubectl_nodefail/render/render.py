"""Findings and plans as text: table (one screen), wide (with evidence), json, yaml, prose.

Every function returns a string; the CLI prints it. Colour is never used, so NO_COLOR holds.
The text functions (table, explain, plan) escape what they show from the cluster first
(printable.clean), before any width is measured; json and yaml keep every value exact.

Each view is a module of its own: data.py (json, yaml, the saved plan), table.py (the diagnose
table and -o wide), outageview.py (the outage view), explain.py (--explain), plantext.py (the
remediation plan and its result), words.py (what they share). This module gathers the names the
CLI, the other views and the tests use, so that `render.NAME` reaches any of them.
"""

from __future__ import annotations

from kubectl_nodefail.render.data import (
    as_json,
    as_yaml,
    plan_data,
    plan_document,
    report_data,
    to_data,
    write_data,
    write_json,
)
from kubectl_nodefail.render.explain import explain_node, explain_pod
from kubectl_nodefail.render.outageview import _left_out, _lines, outage_table, printable
from kubectl_nodefail.render.plantext import _plan_cluster, _plan_head, plan_table
from kubectl_nodefail.render.table import table
from kubectl_nodefail.render.words import headline

__all__ = [
    "_left_out",
    "_lines",
    "_plan_cluster",
    "_plan_head",
    "as_json",
    "as_yaml",
    "explain_node",
    "explain_pod",
    "headline",
    "outage_table",
    "plan_data",
    "plan_document",
    "plan_table",
    "printable",
    "report_data",
    "table",
    "to_data",
    "write_data",
    "write_json",
]

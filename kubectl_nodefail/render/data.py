"""The data views of findings and plans: `-o json` and `-o yaml` of a diagnosis, of a
remediation plan or its result, and the saved form of a plan (with its digest).

json and yaml keep every value exact: nothing here is escaped or cut.
"""

from __future__ import annotations

from typing import Any, TextIO

from kubectl_nodefail.analysis import summary, timeline
from kubectl_nodefail.analysis.findings import Report
from kubectl_nodefail.remediate import planfile
from kubectl_nodefail.render import jsonindent
from kubectl_nodefail.snapshot.data import to_data

API_VERSION = "kubectl-nodefail/v1"


def report_data(report: Report) -> dict[str, Any]:
    data = to_data(report)
    c = summary.counts(report)
    totals = {
        "problems": report.problems,
        "nodesTotal": c.nodes_total,
        "nodesNotReady": c.nodes_not_ready,
        "stuckPods": len(report.pods),
        "podsOnFailedNodes": c.on_failed_nodes,
        "waitingForVolume": c.waiting_for_volume,
        "waitingForNode": c.waiting_for_node,
        "terminatingElsewhere": c.elsewhere,
        "heldByFinalizers": c.held_by_finalizers,
        "onDeletedNodes": c.on_deleted_nodes,
    }
    if report.timelines is not None:  # diagnosed with them: under each node listed
        for node in data["nodes"]:
            entries = report.timelines[node["name"]].entries
            node["timeline"] = timeline.to_data(entries, report.captured_at)
    return {"apiVersion": API_VERSION, "kind": "Diagnosis", "summary": totals, **data}


def as_json(data: Any) -> str:
    """json.dumps(data, indent=2), by jsonindent: the same text, several times faster."""
    return jsonindent.dumps(data) + "\n"


def write_json(data: Any, out: TextIO) -> None:
    """as_json(data) written to `out` chunk by chunk, never held whole: the text of a big
    outage's diagnosis is tens of megabytes."""
    jsonindent.dump(data, out.write)
    out.write("\n")
    out.flush()


def write_data(data: Any, output: str, out: TextIO) -> None:
    """`-o json` (in chunks) or `-o yaml` of data, written to `out`."""
    if output == "json":
        write_json(data, out)
    else:
        out.write(as_yaml(data))
        out.flush()


def as_yaml(data: Any) -> str:
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, width=100))


def plan_document(plan: Any, summary: dict[str, int]) -> dict[str, Any]:
    """The saved form of a plan (also what `remediate -o json` prints for a dry run): its data
    with the digest of what it decides (planfile.digest)."""
    data = plan_data(plan, False, summary)
    data["digest"] = planfile.digest(plan)
    return data


def plan_data(
    plan: Any, confirmed: bool, summary: dict[str, int], interrupted: bool = False
) -> dict[str, Any]:
    data = {
        "apiVersion": API_VERSION,
        "kind": "RemediationResult" if confirmed else "RemediationPlan",
        "confirmed": confirmed,
        "summary": summary,
        **to_data(plan),
    }
    if confirmed:
        data["interrupted"] = interrupted
    return data

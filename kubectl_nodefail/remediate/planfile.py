"""The saved-plan file (`remediate --plan-out` / `--plan-in`): written, read and strictly validated.

A saved plan comes from outside the live cluster, so it is validated once, here, into typed
values before anything else runs: kind and apiVersion, only known fields, every value of its
exact type (`"allowed": "false"` is a string, not a boolean, and is rejected), known actions,
targets in the format their action needs, a UID and resourceVersion on every destructive pod
step, and a digest of the steps so that a hand-edited plan is reported as edited. Anything
wrong raises BadInputError (exit 13) with one line; nothing else escapes.

Even a valid file only narrows what runs: the CLI builds a fresh plan from the live cluster and
executes only the steps both allow (plan.narrow).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import fields
from typing import Any

from kubectl_nodefail.analysis.claims import Premise
from kubectl_nodefail.common.errors import BadInputError
from kubectl_nodefail.remediate.plan import (
    ACTIONS,
    MUTATING,
    NODE_ACTIONS,
    POD_ACTIONS,
    Attestation,
    Binding,
    Plan,
    Step,
)
from kubectl_nodefail.snapshot.data import to_data
from kubectl_nodefail.snapshot.model import format_time, parse_time

API_VERSION = "kubectl-nodefail/v1"
KIND = "RemediationPlan"
SAVED_STRATEGIES = ("out-of-service", "force-delete", "delete-node")
TOP_FIELDS = {"apiVersion", "kind", "confirmed", "summary", "strategy", "steps", "refusals"}
TOP_FIELDS |= {"attested", "digest", "boundTo", "attestations"}
STEP_FIELDS = {f.name: f for f in fields(Step)}
BINDING_FIELDS = {"context", "server", "clusterUid", "capturedAt", "source", "nodeUids"}
ATTESTATION_FIELDS = {"node", "nodeUid", "by", "at"}
# Not part of the digest, reset on load: what a run fills in (result, detail), and the facts a
# step's words about pods rest on (because): words, never inputs; a replayed plan states the
# live plan's (plan.narrow), and a plan saved before they existed still loads.
UNSIGNED = ("result", "detail", "because")
OPTIONAL = ("because",)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = re.compile(rf"^{_LABEL}$")
DNS_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
UID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
RESOURCE_VERSION = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


PREMISE_FIELDS = {"object", "field", "value"}


def _step_data(step: Step) -> dict[str, Any]:
    return {_camel(name): getattr(step, name) for name in STEP_FIELDS if name not in UNSIGNED}


def digest(plan: Plan) -> str:
    """sha256 over what a plan decides and what it is bound to: strategy, attestations (who,
    when, which node object), the cluster and each step (not its result)."""
    return _digest(
        {
            "strategy": plan.strategy,
            "attested": list(plan.attested),
            "steps": [_step_data(s) for s in plan.steps],
            "boundTo": to_data(plan.bound_to),
            "attestations": to_data(plan.attestations),
        }
    )


def _digest(signed: dict[str, Any]) -> str:
    canonical = json.dumps(signed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def sign(data: dict[str, Any]) -> str:
    """The digest a hand-edited document would need, valid or not: for tests of what the
    validation, narrowing and the binding check catch once the digest no longer does."""
    steps = [
        {k: v for k, v in raw.items() if k not in UNSIGNED} if isinstance(raw, dict) else raw
        for raw in data.get("steps") or []
    ]
    return _digest(
        {
            "strategy": data.get("strategy"),
            "attested": data.get("attested"),
            "steps": steps,
            "boundTo": data.get("boundTo"),
            "attestations": data.get("attestations"),
        }
    )


def _what(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return json.dumps(value)
    return {dict: "an object", list: "a list", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _need(where: str, value: Any, kind: type, what: str) -> Any:
    # bool is a subclass of int in Python; JSON keeps them apart, so must we.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise BadInputError(f"{where} must be {what}, not {_what(value)}")
    return value


def _strings(where: str, value: Any) -> list[str]:
    _need(where, value, list, "a list of strings")
    for i, item in enumerate(value):
        _need(f"{where}[{i}]", item, str, "a string")
    return list(value)


def _premises(where: str, value: Any) -> list[Premise]:
    """A step's facts: objects of exactly {object, field, value}, the first two strings (the
    value is any JSON a field can hold). They are words, never inputs: narrowing replaces them
    with the live plan's."""
    _need(where, value, list, "a list of premises")
    out = []
    for i, raw in enumerate(value):
        _need(f"{where}[{i}]", raw, dict, "an object")
        _exactly(f"{where}[{i}]", raw, PREMISE_FIELDS)
        obj = _need(f"{where}[{i}].object", raw["object"], str, "a string")
        path = _need(f"{where}[{i}].field", raw["field"], str, "a string")
        out.append(Premise(obj, path, raw["value"]))
    return out


def _name(where: str, value: str, pattern: re.Pattern[str], limit: int, what: str) -> str:
    if len(value) > limit or not pattern.match(value):
        raise BadInputError(f"{where} is not a valid {what}: {_what(value)}")
    return value


def _is_time(value: str) -> bool:
    """An RFC 3339 UTC time in the form this tool writes (2026-01-31T23:59:59Z)."""
    try:
        when = parse_time(value)
        return when is not None and when.tzinfo is not None and format_time(when) == value
    except (ValueError, OverflowError):
        return False


DESTRUCTIVE_NODE_ACTIONS = ("taint-out-of-service", "delete-node")


def step_problem(step: Step) -> str | None:
    """Why this step is malformed (its shape, not its safety), or None. Shared by the loader and
    the executor, which refuses a malformed destructive step instead of sending it."""
    if step.action not in ACTIONS:
        return f"unknown action {_what(step.action)} (known: {', '.join(ACTIONS)})"
    if not step.node or len(step.node) > 253 or not DNS_SUBDOMAIN.match(step.node):
        return f"node {_what(step.node)} is not a node name"
    kind, _, rest = step.target.partition("/")
    if kind == "node":
        if step.action in POD_ACTIONS:
            return f"{step.action} needs a pod target (pod/NAMESPACE/NAME), not {step.target!r}"
        if rest != step.node:
            return f"target {step.target!r} is not the step's node {step.node!r}"
    elif kind == "pod":
        if step.action in NODE_ACTIONS:
            return f"{step.action} needs the target node/{step.node}, not {step.target!r}"
        ns, _, name = rest.partition("/")
        if not (ns and len(ns) <= 63 and DNS_LABEL.match(ns)):
            return f"target {step.target!r}: {_what(ns)} is not a namespace name"
        if not (name and len(name) <= 253 and DNS_SUBDOMAIN.match(name)):
            return f"target {step.target!r}: {_what(name)} is not a pod name"
    else:
        return f"target {_what(step.target)} is neither node/NAME nor pod/NAMESPACE/NAME"
    if step.action in DESTRUCTIVE_NODE_ACTIONS and not UID.match(step.uid):
        # a Node's delete or out-of-service taint names the object planned, as a pod's delete
        # does: the executor compares it with the Node read live; a step without it is never sent
        return f"{step.action} {step.target} has no valid node UID ({_what(step.uid)})"
    if step.action in MUTATING and kind == "pod":
        if not UID.match(step.uid):
            return f"{step.action} {step.target} has no valid UID ({_what(step.uid)})"
        if not RESOURCE_VERSION.match(step.resource_version):
            return (
                f"{step.action} {step.target} has no valid resourceVersion "
                f"({_what(step.resource_version)})"
            )
    elif step.uid and not UID.match(step.uid):
        return f"{step.target}: {_what(step.uid)} is not a UID"
    if step.lease_renewed and not _is_time(step.lease_renewed):
        return f"leaseRenewed {_what(step.lease_renewed)} is not a time like 2026-01-31T23:59:59Z"
    return None


def _step(where: str, raw: Any) -> Step:
    _need(where, raw, dict, "an object")
    known = {_camel(n): n for n in STEP_FIELDS}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise BadInputError(f"{where} has unknown field {unknown[0]!r}")
    missing = sorted(set(known) - set(raw) - {_camel(n) for n in OPTIONAL})
    if missing:
        raise BadInputError(f"{where} lacks the field {missing[0]!r}")
    args: dict[str, Any] = {}
    for key, name in known.items():
        if key not in raw:
            continue
        value = raw[key]
        if name == "allowed":
            args[name] = _need(f"{where}.{key}", value, bool, "true or false")
        elif name in ("evidence", "releases", "leaves_stuck"):
            args[name] = _strings(f"{where}.{key}", value)
        elif name == "because":
            args[name] = _premises(f"{where}.{key}", value)
        else:
            args[name] = _need(f"{where}.{key}", value, str, "a string")
    args["result"], args["detail"], args["because"] = "", "", []
    step = Step(**args)
    problem = step_problem(step)
    if problem:
        raise BadInputError(f"{where}: {problem}")
    return step


def _binding(raw: Any) -> Binding:
    _need("boundTo", raw, dict, "an object")
    _exactly("boundTo", raw, BINDING_FIELDS)
    text = {
        k: _need(f"boundTo.{k}", raw[k], str, "a string") for k in BINDING_FIELDS - {"nodeUids"}
    }
    if text["capturedAt"] and not _is_time(text["capturedAt"]):
        raise BadInputError(f"boundTo.capturedAt {_what(text['capturedAt'])} is not a time")
    if text["clusterUid"] and not UID.match(text["clusterUid"]):
        raise BadInputError(f"boundTo.clusterUid {_what(text['clusterUid'])} is not a UID")
    nodes = _need("boundTo.nodeUids", raw["nodeUids"], dict, "an object")
    for name, uid in nodes.items():
        _name(f"boundTo.nodeUids key {name!r}", name, DNS_SUBDOMAIN, 253, "node name")
        _need(f"boundTo.nodeUids[{name!r}]", uid, str, "a string")
        if not UID.match(uid):
            raise BadInputError(f"boundTo.nodeUids[{name!r}] {_what(uid)} is not a UID")
    return Binding(
        context=text["context"],
        server=text["server"],
        cluster_uid=text["clusterUid"],
        captured_at=text["capturedAt"],
        source=text["source"],
        node_uids=dict(nodes),
    )


def _attestation(where: str, raw: Any) -> Attestation:
    _need(where, raw, dict, "an object")
    _exactly(where, raw, ATTESTATION_FIELDS)
    text = {k: _need(f"{where}.{k}", raw[k], str, "a string") for k in ATTESTATION_FIELDS}
    _name(f"{where}.node", text["node"], DNS_SUBDOMAIN, 253, "node name")
    if text["nodeUid"] and not UID.match(text["nodeUid"]):
        raise BadInputError(f"{where}.nodeUid {_what(text['nodeUid'])} is not a UID")
    if not _is_time(text["at"]):
        raise BadInputError(f"{where}.at {_what(text['at'])} is not a time")
    return Attestation(text["node"], text["nodeUid"], text["by"], text["at"])


def _exactly(where: str, raw: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        raise BadInputError(f"{where} has unknown field {unknown[0]!r}")
    missing = sorted(known - set(raw))
    if missing:
        raise BadInputError(f"{where} lacks the field {missing[0]!r}")


def load(data: Any) -> Plan:
    """A Plan from a parsed saved-plan document; BadInputError (one line) if anything is off."""
    plan = _parse(data)
    saved = _need("digest", data["digest"], str, "a string")
    if not DIGEST.match(saved):
        raise BadInputError(f"digest must be sha256:<64 hex digits>, not {_what(saved)}")
    if saved != digest(plan):
        raise BadInputError(
            "the plan was edited after it was saved: its steps do not match their digest "
            "(save a new plan with --plan-out)"
        )
    return plan


def _parse(data: Any) -> Plan:
    """Everything but the digest check."""
    _need("the plan", data, dict, "a JSON object")
    if data.get("kind") != KIND:
        hint = " (that is the result of a run)" if data.get("kind") == "RemediationResult" else ""
        raise BadInputError(f"kind must be {KIND!r}, not {_what(data.get('kind'))}{hint}")
    if data.get("apiVersion") != API_VERSION:
        raise BadInputError(
            f"apiVersion must be {API_VERSION!r}, not {_what(data.get('apiVersion'))}"
        )
    unknown = sorted(set(data) - TOP_FIELDS)
    if unknown:
        raise BadInputError(f"unknown field {unknown[0]!r}")
    if "boundTo" not in data:
        raise BadInputError(
            "the plan names no cluster (saved by an older kubectl-nodefail?): it cannot be "
            "bound to one; save a new plan with --plan-out"
        )
    for key in ("strategy", "steps", "refusals", "attested", "digest", "attestations"):
        if key not in data:
            raise BadInputError(f"the field {key!r} is missing")
    if data.get("confirmed", False) is not False:
        raise BadInputError(f"confirmed must be false, not {_what(data['confirmed'])}")
    if "summary" in data:
        _need("summary", data["summary"], dict, "an object")
    strategy = _need("strategy", data["strategy"], str, "a string")
    if strategy not in SAVED_STRATEGIES:
        raise BadInputError(
            f"strategy must be one of {', '.join(SAVED_STRATEGIES)}, not {_what(strategy)}"
        )
    attested = _strings("attested", data["attested"])
    for i, node in enumerate(attested):
        _name(f"attested[{i}]", node, DNS_SUBDOMAIN, 253, "node name")
    refusals = _strings("refusals", data["refusals"])
    raw_steps = _need("steps", data["steps"], list, "a list")
    steps = [_step(f"steps[{i}]", raw) for i, raw in enumerate(raw_steps)]
    bound_to = _binding(data["boundTo"])
    raw_attestations = _need("attestations", data["attestations"], list, "a list")
    records = [_attestation(f"attestations[{i}]", a) for i, a in enumerate(raw_attestations)]
    if sorted(a.node for a in records) != sorted(attested):
        raise BadInputError(
            "attestations must record exactly the attested nodes "
            f"({', '.join(attested) or 'none'}), not {', '.join(a.node for a in records) or 'none'}"
        )
    if bound_to.cluster_uid:  # bound to a live cluster: every node step names its node object
        for i, step in enumerate(steps):
            if step.target.startswith("node/") and not step.uid:
                raise BadInputError(f"steps[{i}] ({step.action} {step.target}) has no node UID")
        for i, record in enumerate(records):
            if not record.node_uid:
                raise BadInputError(f"attestations[{i}] ({record.node}) has no node UID")
    return Plan(
        strategy=strategy,
        steps=steps,
        refusals=refusals,
        attested=attested,
        bound_to=bound_to,
        attestations=records,
    )


def read(path: str) -> Plan:
    """Load and validate a saved plan file; every failure is BadInputError naming the file."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError) as exc:
        raise BadInputError(f"cannot read the plan {path}: {exc}") from exc
    try:
        return load(data)
    except BadInputError as exc:
        raise BadInputError(f"plan {path}: {exc.message}") from exc

"""What `kubectl nodefail dump` writes by default: each object cut to what the analysis reads.

A dump gets attached to tickets. Whole objects carry secrets: a container's `env[].value`, its
`args` and `command`, the same in a Deployment's or a StatefulSet's pod template and in
`kubectl.kubernetes.io/last-applied-configuration`, and whatever else an annotation holds. The
dump schema (dumpschema.py) already names every field the analysis reads, and `--from-file`
cuts each object to it as it loads; the dump is cut the same way before it is written
(dumpschema.take_live, so it follows the schema as it changes), and of the annotations only
those the analysis reads are kept (kept_annotations). A redacted dump diagnoses exactly as the
whole one (tests/unit/cluster/test_dump_redaction.py). `dump --no-redact` writes whole objects.
"""

from __future__ import annotations

from typing import Any

from kubectl_nodefail.analysis import automation, controllers, facts, timeline
from kubectl_nodefail.snapshot import dumpschema

Obj = dict[str, Any]


def kept_annotations() -> frozenset[str]:
    """The annotations the analysis reads, by the analysis modules' own names for them."""
    return frozenset(
        {
            facts.ANNOTATION_MIRROR,  # a static pod's mirror
            facts.ANNOTATION_TAINTED_BY,  # who applied the out-of-service taint
            timeline.OUT_OF_SERVICE_BY,
            controllers.DEPLOYMENT_REVISION,  # a ReplicaSet's revision against its Deployment's
            automation.MACHINE_ANNOTATION,  # a node's Cluster API Machine
            automation.CLUSTER_NAMESPACE_ANNOTATION,
            automation.CAPI_SKIP_REMEDIATION,
            automation.CAPI_PAUSED,
        }
    )


NOTE_KEY = "redacted"


def note() -> str:
    """What the dump's notes say was left out."""
    return (
        "each object cut to the fields the analysis reads "
        "(kubectl_nodefail/snapshot/dumpschema.py): container env, args and command, pod "
        "templates, managedFields' field lists, the other fields of spec and status, and every "
        "annotation but "
        + ", ".join(sorted(kept_annotations()))
        + " were left out; `kubectl nodefail dump --no-redact` keeps whole objects"
    )


def items(objects: list[Obj]) -> list[Obj]:
    """The objects as the analysis reads them (an object of the wrong shape: exit 14, as for
    diagnose), each with only the annotations it reads."""
    cut = dumpschema.take_live(objects)
    kept = kept_annotations()
    for obj in cut:
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "annotations" in meta:
            known = {k: v for k, v in meta["annotations"].items() if k in kept}
            if known:
                meta["annotations"] = known
            else:
                del meta["annotations"]
    return cut

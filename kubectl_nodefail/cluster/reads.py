"""What every read of gather.py shares: optional reads whose failures become stated gaps
(_Reader), reads for each examined node (one request per node, or one list past MANY_NODES),
the pod collections to read (per namespace given, or all of them), label-selector values split
into short `key in (...)` chunks, whether one list across namespaces pays (wide_pays), and the
progress callback (Progress).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from kubectl_nodefail.cluster import kube
from kubectl_nodefail.cluster.paging import PAGE_SIZE
from kubectl_nodefail.common.errors import (
    Forbidden,
    MalformedResponse,
    NodefailError,
    NotFound,
    ServerError,
)
from kubectl_nodefail.snapshot.model import Obj

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class _Reader:
    """Optional reads: a 403, a 5xx, a malformed answer or a list that broke off twice is
    recorded as a gap, a 404 as 'vanished'."""

    def __init__(self, cluster: kube.Cluster) -> None:
        self.cluster = cluster
        self.gaps: list[str] = []

    def optional(self, what: str, fn: Callable[[], Any], default: Any) -> Any:
        try:
            return fn()
        except Forbidden:
            gap = f"{what}: forbidden, so the diagnosis goes without them"
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default
        except (ServerError, MalformedResponse) as exc:
            if getattr(exc, "mid_list", False):
                failure = f"broke off twice mid-way ({exc})"
            elif exc.status is None:
                failure = "sent a malformed answer"
            else:
                failure = f"answered {exc.status}"
            gap = f"{what}: the API server {failure}, so the diagnosis goes without them"
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default
        except NotFound:
            return default
        except NodefailError as exc:
            if not getattr(exc, "mid_list", False):
                raise
            gap = (
                f"{what}: the list broke off twice mid-way ({exc}), so the diagnosis goes "
                "without them"
            )
            if gap not in self.gaps:
                self.gaps.append(gap)
            return default


SELECTOR_CHUNK = 100  # values per `key in (...)`: keeps URLs short
# Objects wanted in many namespaces (owners of one kind, owners' other pods): a read per
# namespace, or one cluster-wide list, whichever the numbers favour (docs/scale.md, "Owners:
# narrow or wide"). Below WIDE_FROM narrow reads, narrow; from it, the wide list when it takes
# fewer requests and brings at most ITEMS_PER_READ objects per narrow read it replaces (a GET
# costs the API server about what encoding ten objects does: APF counts a list of up to 100
# objects as one seat).
WIDE_FROM = 8
ITEMS_PER_READ = 10
MANY_NODES = 30  # examining more nodes than this: one list of leases / node events, not one each


def _pod_paths(namespaces: Collection[str]) -> list[tuple[str | None, str]]:
    """(namespace or None for all, collection path) of the pods to read."""
    if namespaces:
        return [(ns, kube.pod_path(ns)) for ns in namespaces]
    return [(None, "/api/v1/pods")]


def _per_node(
    reader: _Reader,
    what: str,
    focus: list[str],
    all_at_once: Callable[[set[str]], list[Obj]],
    one: Callable[[str], list[Obj]],
) -> list[Obj]:
    """What the examined nodes need of one kind: a request per node (in parallel), or, past
    MANY_NODES of them, one list kept to those nodes (a gap in the report if it fails)."""
    if len(focus) > MANY_NODES:
        return list(reader.optional(what, lambda: all_at_once(set(focus)), []))
    out: list[Obj] = []
    for batch in kube.parallel(one, focus):
        out += batch
    return out


def _selector_chunks(key: str, values: Iterable[str]) -> list[str]:
    ordered = sorted(set(values))
    return [
        f"{key} in ({','.join(ordered[i : i + SELECTOR_CHUNK])})"
        for i in range(0, len(ordered), SELECTOR_CHUNK)
    ]


def wide_pays(narrow_reads: int, total: int | None, wanted: int = 0, page: int = PAGE_SIZE) -> bool:
    """One cluster-wide list of `total` objects (None: unknown) instead of `narrow_reads`;
    `wanted`: objects the narrow reads would bring too (not overhead)."""
    if total is None or narrow_reads < WIDE_FROM:
        return False
    return pages(total, page) + 1 < narrow_reads and total <= wide_cap(narrow_reads, wanted)


def pages(total: int, page: int = PAGE_SIZE) -> int:
    """The requests a list of `total` objects takes (one at least)."""
    return max(1, -(-total // page))


def wide_cap(narrow_reads: int, wanted: int = 0) -> int:
    """The most objects a cluster-wide list may bring instead of `narrow_reads`."""
    return wanted + ITEMS_PER_READ * narrow_reads

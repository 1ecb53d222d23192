"""What one run asked of the API server: per resource and verb, the requests sent, the bytes of
their answers and the seconds they took (`-v` prints it on stderr at the end; issue 37's request
budget, docs/scale.md). Every answer counts, an error's too: it cost the server as much.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass
class Spent:
    requests: int = 0
    bytes: int = 0
    seconds: float = 0.0
    absent: int = 0  # 404: a resource not installed (a CRD), an object gone since it was named
    failed: int = 0  # other answers outside 2xx, and requests that got no answer


def resource_of(method: str, path: str) -> str:
    """`VERB RESOURCE[.GROUP]` of a request path, as kubectl -v names them: `list pods`, `get
    nodes`, `patch nodes`, `create events.events.k8s.io`; a path outside the resource API (the
    version, discovery, OpenAPI) is named by its first part."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return f"{method.lower()} /{parts[0] if parts else ''}"
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # namespaces/NS/RESOURCE[/NAME[/SUB]]
    if not rest:
        return f"{method.lower()} /{'/'.join(parts)}"  # discovery of a group version
    resource = rest[0] + (f".{group}" if group else "")
    if len(rest) >= 3:
        resource += f"/{rest[2]}"  # a subresource: status, eviction, binding
    verb = {
        "GET": "get" if len(rest) >= 2 else "list",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
        "WATCH": "watch",
    }.get(method, method.lower())
    return f"{verb} {resource}"


class Budget:
    """The requests of a run, counted from every thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spent: dict[str, Spent] = {}

    def record(self, method: str, path: str, size: int, seconds: float, status: int | None) -> None:
        """One request sent: its answer's HTTP status (None: no answer)."""
        key = resource_of(method, path)
        with self._lock:
            spent = self.spent.setdefault(key, Spent())
            spent.requests += 1
            spent.bytes += size
            spent.seconds += seconds
            spent.absent += status == 404
            spent.failed += status is None or (status != 404 and not 200 <= status <= 299)

    def total(self) -> Spent:
        with self._lock:
            every = list(self.spent.values())
        return Spent(
            sum(s.requests for s in every),
            sum(s.bytes for s in every),
            sum(s.seconds for s in every),
            sum(s.absent for s in every),
            sum(s.failed for s in every),
        )

    def lines(self) -> list[str]:
        """The budget as printed by -v: a total, then one line per resource, most bytes first.
        Seconds are summed over requests, which run in parallel: more than the wall time."""
        total = self.total()
        if not total.requests:
            return []
        with self._lock:
            rows = sorted(self.spent.items(), key=lambda kv: (-kv[1].bytes, kv[0]))
        out = [
            f"requests: {total.requests} ({_size(total.bytes)} read, {total.seconds:.2f} s "
            f"summed over requests{_outcomes(total, ', ')})"
        ]
        width = max(len(key) for key, _ in rows)
        for key, s in rows:
            out.append(
                f"  {key:<{width}}  {s.requests:>5}  {_size(s.bytes):>10}  {s.seconds:7.2f} s"
                + _outcomes(s, "  ")
            )
        return out


def _outcomes(spent: Spent, lead: str) -> str:
    said = [f"{spent.absent} not found (404)"] if spent.absent else []
    said += [f"{spent.failed} failed"] if spent.failed else []
    return lead + ", ".join(said) if said else ""


def _size(n: int) -> str:
    return f"{n / MIB:.2f} MiB" if n >= MIB // 10 else f"{n / 1024:.1f} KiB"

"""The snapshot a command analyses: read from the live cluster (held to the dump schema, its
pods and nodes cut as their pages arrive), from a dump file, or the bundled demo; the -n
namespaces the cluster does not have said on stderr; and the one connection `diagnose --watch`
reads on, read after read (ReadConnection)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kubectl_nodefail.cli.flags import Connection
from kubectl_nodefail.cli.running import DEADLINE_KEY, reporter
from kubectl_nodefail.cluster.gather import gather, unknown_namespaces
from kubectl_nodefail.common.errors import AuthError, Forbidden
from kubectl_nodefail.examples import demo_path
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot import model as snapshot
from kubectl_nodefail.term import progress

T = TypeVar("T")


def load_snapshot(
    conn: Connection,
    from_file: str | None,
    demo: bool,
    nodes: tuple[str, ...],
    namespaces: tuple[str, ...],
    warn: bool = True,
    kept: Any = None,
    reads: ReadConnection | None = None,
) -> Any:
    """A Snapshot from a dump file, the bundled demo, or the live cluster. `warn`: say on
    stderr which -n namespaces the cluster does not have (not under --watch's screen).
    `kept`: what --watch carries from its last read (gather); `reads`: its connection."""
    if demo:
        path = demo_path()
        click.echo(f"(demo: a snapshot recorded from a real control plane: {path})", err=True)
        return snapshot.load_dump(path)
    if from_file:
        return snapshot.load_dump(from_file)
    if reads is not None:
        return reads.read(lambda cluster: _gathered(conn, cluster, nodes, namespaces, kept, warn))
    cluster = conn.cluster()
    try:
        return _gathered(conn, cluster, nodes, namespaces, kept, warn)
    finally:
        cluster.close()


def _gathered(
    conn: Connection,
    cluster: Any,
    nodes: tuple[str, ...],
    namespaces: tuple[str, ...],
    kept: Any,
    warn: bool,
) -> Any:
    try:
        snap = gathered(
            cluster,
            only_nodes=nodes,
            namespaces=namespaces,
            progress=reporter(conn.verbose),
            kept=kept,
        )
        if warn:
            warn_unknown_namespaces(cluster, namespaces)
        return snap
    finally:
        progress.done()


# A read after this long without one closes the kept-open connections first (a NAT or firewall
# may have dropped them silently: AWS's NAT gateways after 350 s idle).
IDLE_SECONDS = 60.0


class ReadConnection:
    """The connection `diagnose --watch` reads the cluster on, read after read, as one kubectl
    process keeps its own: its TLS connections stay open (closed first after IDLE_SECONDS
    without a read), and a credential plugin runs again only once its credential expires (not
    at every read). Bound to the context the watch began on (a `kubectl config use-context`
    meanwhile moves neither its reads nor its watches). A read on a kept connection refused for
    its credentials (401: a token file rotated, a token revoked) is made again at once on a new
    one (the kubeconfig, the token file and the plugin read again), as each read connected
    before; refused again, or forbidden (403), it fails, and the next read connects anew too.
    Each read's --deadline is set on it as the read starts."""

    def __init__(self, conn: Connection, context: str | None) -> None:
        self.conn = conn._replace(context=context or conn.context)
        self._cluster: Any = None
        self._used = 0.0  # time.monotonic() when the last read ended (or it connected)

    def cluster(self) -> Any:
        if self._cluster is None:
            self._cluster, self._used = self.conn.cluster(), time.monotonic()
        elif time.monotonic() - self._used > IDLE_SECONDS:
            self._cluster.hang_up()
        ctx = click.get_current_context(silent=True)
        self._cluster.deadline = ctx.meta.get(DEADLINE_KEY) if ctx is not None else None
        return self._cluster

    def read(self, fn: Callable[[Any], T]) -> T:
        """fn(cluster), made again once on a new connection if refused with 401 on one kept
        from an earlier read."""
        kept = self._cluster is not None
        try:
            return self._once(fn)
        except AuthError as exc:
            if isinstance(exc, Forbidden) or not kept:
                raise
        return self._once(fn)

    def _once(self, fn: Callable[[Any], T]) -> T:
        try:
            return fn(self.cluster())
        except AuthError:
            self.close()  # the kubeconfig and the credentials read anew next time
            raise
        finally:
            self._used = time.monotonic()

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster, cluster = None, self._cluster
            cluster.close()


def warn_unknown_namespaces(cluster: Any, namespaces: tuple[str, ...]) -> None:
    """One stderr line per -n namespace the cluster does not have; the exit code stays."""
    progress.done()
    for line in unknown_namespaces(cluster, namespaces):
        click.echo(f"warning: {line}", err=True)


def gathered(cluster: Any, **options: Any) -> Any:
    """gather()'s snapshot of the live cluster for the analysis, checked(): its pods and
    nodes are cut to the dump schema as their pages arrive, not once all are read (a 1,000-node
    outage's pods and their owners' other pods, held whole, were most of diagnose's memory;
    gather itself reads the nodes' conditions, which must be checked first)."""
    cluster.shape["Pod"] = cluster.shape["Node"] = dumpschema.cut_live
    return checked(gather(cluster, **options), cut=("pods", "nodes"))


def checked(snap: Any, cut: tuple[str, ...] = ()) -> Any:
    """A live snapshot held to the dump schema and cut the same way (dumpschema.take_live):
    the analysis trusts its input whichever way it came. `cut`: lists whose every object
    was cut as it was read (not cut twice)."""
    for name in snapshot.LISTS:
        if name not in cut:
            setattr(snap, name, dumpschema.take_live(getattr(snap, name)))
    return snap

"""The snapshot a command analyses: read from the live cluster (held to the dump schema, its
pods and nodes cut as their pages arrive), from a dump file, or the bundled demo; the -n
namespaces the cluster does not have said on stderr; and the one connection `diagnose --watch`
reads on, read after read (ReadConnection)."""

from __future__ import annotations

from typing import Any

import click

from kubectl_nodefail.cli.flags import Connection
from kubectl_nodefail.cli.running import DEADLINE_KEY, reporter
from kubectl_nodefail.cluster.gather import gather, unknown_namespaces
from kubectl_nodefail.common.errors import AuthError
from kubectl_nodefail.examples import demo_path
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot import model as snapshot
from kubectl_nodefail.term import progress


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
    cluster = conn.cluster() if reads is None else reads.cluster()
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
    except AuthError:
        if reads is not None:  # read the kubeconfig and credentials anew next time
            reads.close()
        raise
    finally:
        progress.done()
        if reads is None:
            cluster.close()


class ReadConnection:
    """The connection `diagnose --watch` reads the cluster on, read after read, as one kubectl
    process keeps its own: its TLS connections stay open, and a credential plugin runs again
    only once its credential expires (not at every read). Bound to the context the watch began
    on (a `kubectl config use-context` meanwhile moves neither its reads nor its watches);
    made anew after a read refused for its credentials (401 or 403: a token file rotated, a
    role changed). Each read's --deadline is set on it as the read starts."""

    def __init__(self, conn: Connection, context: str | None) -> None:
        self.conn = conn._replace(context=context or conn.context)
        self._cluster: Any = None

    def cluster(self) -> Any:
        if self._cluster is None:
            self._cluster = self.conn.cluster()
        ctx = click.get_current_context(silent=True)
        self._cluster.deadline = ctx.meta.get(DEADLINE_KEY) if ctx is not None else None
        return self._cluster

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

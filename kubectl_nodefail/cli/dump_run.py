"""The run of `kubectl nodefail dump` (its options and help: dump.py): what diagnose reads,
gathered from the cluster and written as one JSON file (redacted unless --no-redact), for
offline analysis with --from-file."""

from __future__ import annotations

import sys

import click

from kubectl_nodefail.cli.flags import Connection
from kubectl_nodefail.cli.live import warn_unknown_namespaces
from kubectl_nodefail.cli.outfiles import write_file
from kubectl_nodefail.cli.running import reporter
from kubectl_nodefail.cluster.dumpfile import write_dump
from kubectl_nodefail.cluster.gather import gather
from kubectl_nodefail.common import outpath
from kubectl_nodefail.common.errors import Exit
from kubectl_nodefail.snapshot import dumpschema
from kubectl_nodefail.snapshot import model as snapshot
from kubectl_nodefail.term import progress


def dump(
    nodes: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
    request_timeout: float,
    verbose: int,
    namespaces: tuple[str, ...],
    out: str,
    no_redact: bool,
) -> int:
    """The run of `kubectl nodefail dump` (its options and help: dump.py)."""
    if out != "-":
        outpath.check_writable("--file", out)  # before the cluster is read
    conn = Connection(kubeconfig, context, request_timeout, verbose)
    cluster = conn.cluster()
    # gather reads the nodes' conditions: held to the schema as they arrive, kept whole
    cluster.shape["Node"] = dumpschema.check_live
    try:
        snap = gather(cluster, only_nodes=nodes, namespaces=namespaces, progress=reporter(verbose))
        warn_unknown_namespaces(cluster, namespaces)
    finally:
        progress.done()
        cluster.close()
    snapshot.require_nodes(snap, nodes)
    if no_redact:
        click.echo(
            "warning: --no-redact: the dump holds whole objects, secrets in env values, args, "
            "commands and annotations included",
            err=True,
        )
    if out == "-":
        write_dump(snap, sys.stdout, redact=not no_redact)
        sys.stdout.flush()
    else:
        write_file(
            "--file", out, lambda fh: write_dump(snap, fh, redact=not no_redact), private=True
        )
        click.echo(f"wrote {out}: {len(snap.nodes)} nodes, {len(snap.pods)} pods", err=True)
    return Exit.OK

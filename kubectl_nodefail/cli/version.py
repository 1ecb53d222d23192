"""`kubectl nodefail version`, and what it reports: the plugin, the Python running it, what
decodes JSON (orjson where the platform has it: common/jsondecode.py), and the Kubernetes
version of the server the kubeconfig points at, or why there is none.

Asking the server is best effort: the command is used to check an installation, so a missing
kubeconfig or an unreachable cluster is reported in the output, never as a failure."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from typing import Any

import click

from kubectl_nodefail import __version__
from kubectl_nodefail.cli.flags import Connection, connection_options
from kubectl_nodefail.cli.helptext import SUMMARIES, VERSION_EXAMPLES
from kubectl_nodefail.cli.running import handle_errors
from kubectl_nodefail.cli.usage import NodefailCommand
from kubectl_nodefail.common import exitcodes, jsondecode
from kubectl_nodefail.common.errors import Exit, NodefailError


@dataclass
class VersionInfo:
    plugin: str
    python: str
    server: str = ""  # gitVersion, e.g. v1.36.1
    context: str = ""
    server_error: str = ""  # why there is no server version
    asked: bool = True
    decoder: str = field(default_factory=jsondecode.decoder)  # what decodes the API's JSON

    def text(self) -> str:
        lines = [f"kubectl-nodefail {self.plugin} (Python {self.python})"]
        lines.append(f"JSON decoder: {self.decoder}")
        if not self.asked:
            return "\n".join(lines) + "\n"
        if self.server:
            lines.append(f"Server: {self.server} (context {self.context or '(current)'})")
        else:
            lines.append(f"Server: unknown: {self.server_error}")
        return "\n".join(lines) + "\n"

    def json(self) -> str:
        data: dict[str, Any] = {
            "plugin": self.plugin,
            "python": self.python,
            "jsonDecoder": self.decoder,
        }
        if self.asked:
            data["server"] = {
                "gitVersion": self.server or None,
                "context": self.context or None,
                "error": self.server_error or None,
            }
        return json.dumps(data, indent=2) + "\n"


def describe(conn: Any | None) -> VersionInfo:
    """The versions; `conn` (flags.Connection) None: the plugin's only."""
    info = VersionInfo(__version__, platform.python_version(), asked=conn is not None)
    if conn is None:
        return info
    try:
        cluster = conn.cluster()
    except NodefailError as exc:
        info.server_error = exc.line()
        return info
    try:
        info.context = cluster.context
        info.server = cluster.server_version()
    except NodefailError as exc:
        info.server_error = exc.line()
    finally:
        cluster.close()
    return info


@click.command(
    cls=NodefailCommand,
    short_help=SUMMARIES["version"],
    epilog=VERSION_EXAMPLES + exitcodes.help_text("version"),
)
@connection_options
@click.option("--client", is_flag=True, help="The plugin's version only; no cluster read.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
@handle_errors
def version(
    kubeconfig: str | None,
    context: str | None,
    request_timeout: float,
    verbose: int,
    client: bool,
    output: str,
) -> int:
    """Print the plugin's version and the Kubernetes version of the server it sees.

    Without a reachable cluster it says why, and still exits 0. The server is asked for at
    most 5 seconds unless --request-timeout says less.
    """
    conn = Connection(kubeconfig, context, min(request_timeout, 5.0), verbose)
    info = describe(None if client else conn)
    click.echo(info.json() if output == "json" else info.text(), nl=False)
    return Exit.OK

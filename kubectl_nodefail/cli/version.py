"""What `kubectl nodefail version` reports: the plugin, the Python running it, and the
Kubernetes version of the server the kubeconfig points at, or why there is none.

Asking the server is best effort: the command is used to check an installation, so a missing
kubeconfig or an unreachable cluster is reported in the output, never as a failure."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from typing import Any

from kubectl_nodefail import __version__
from kubectl_nodefail.common.errors import NodefailError


@dataclass
class VersionInfo:
    plugin: str
    python: str
    server: str = ""  # gitVersion, e.g. v1.36.1
    context: str = ""
    server_error: str = ""  # why there is no server version
    asked: bool = True

    def text(self) -> str:
        lines = [f"kubectl-nodefail {self.plugin} (Python {self.python})"]
        if not self.asked:
            return lines[0] + "\n"
        if self.server:
            lines.append(f"Server: {self.server} (context {self.context or '(current)'})")
        else:
            lines.append(f"Server: unknown: {self.server_error}")
        return "\n".join(lines) + "\n"

    def json(self) -> str:
        data: dict[str, Any] = {"plugin": self.plugin, "python": self.python}
        if self.asked:
            data["server"] = {
                "gitVersion": self.server or None,
                "context": self.context or None,
                "error": self.server_error or None,
            }
        return json.dumps(data, indent=2) + "\n"


def describe(conn: Any | None) -> VersionInfo:
    """The versions; `conn` (cli.Connection) None: the plugin's only."""
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

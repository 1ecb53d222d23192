"""Credential plugins (a kubeconfig user's `exec`), run as kubectl runs them, but never silently.

The protocol is client-go's (client.authentication.k8s.io v1 and v1beta1): the command
(relative to the kubeconfig's folder when it names a path, else looked up on PATH) runs with
our environment plus `env`, its `args`, and KUBERNETES_EXEC_INFO holding an ExecCredential
whose spec says whether it may talk to the user (`interactiveMode`: Never, IfAvailable - the
default of v1beta1 -, Always) and, with `provideClusterInfo`, the cluster it is for. Its
stdout is an ExecCredential of the same apiVersion whose status carries a token and/or a
client certificate and key, and maybe an expirationTimestamp: the credential is reused until
then and the plugin run again after.

Where kubectl sends nothing, so do we: a plugin that cannot be started, exits non-zero,
prints something that is not such an ExecCredential, or outlasts the run's deadline stops the
command with one line naming the plugin and carrying its own message (stderr) and installHint
(exit 12, AuthError), before any request. A plugin is killed (with its process group) at the
deadline, on Ctrl-C, and by the CLI's watchdog: none outlives the command.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kubectl_nodefail.common.errors import AuthError, one_line

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
MODES = ("Never", "IfAvailable", "Always")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
MESSAGE_CHARS = 300  # how much of a plugin's stderr the error line carries

_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()


@dataclass(frozen=True)
class Plugin:
    """A user's `exec` section, checked (see `parse`)."""

    user: str
    command: str  # as written in the kubeconfig
    path: str  # where it is run from: resolved against the kubeconfig's folder if it has a /
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str
    interactive_mode: str
    provide_cluster_info: bool
    install_hint: str


@dataclass(frozen=True)
class Credential:
    """What a plugin returned: a token and/or a client certificate (PEM bytes)."""

    token: str | None
    cert: bytes | None
    key: bytes | None
    expires: float | None  # time.time() when it must be asked for again; None: never

    def fresh(self, now: float | None = None) -> bool:
        return self.expires is None or (now if now is not None else time.time()) < self.expires


class Problem(Exception):
    """An `exec` section kubectl would refuse (the loader adds the file's name)."""


def parse(user: str, body: Any, base: str) -> Plugin:
    """The `exec` section of user `user` (defined in a file of folder `base`), checked as
    kubectl checks it."""
    if not isinstance(body, dict):
        raise Problem(f"user {user!r}: exec is not a mapping")
    command = body.get("command")
    if not isinstance(command, str) or not command:
        raise Problem(f"user {user!r}: exec has no command")
    version = body.get("apiVersion")
    if not version:
        raise Problem(f"user {user!r}: exec has no apiVersion")
    if version not in API_VERSIONS:
        raise Problem(
            f"user {user!r}: exec apiVersion {version!r} is not supported "
            f"(kubectl speaks {' and '.join(API_VERSIONS)})"
        )
    mode = body.get("interactiveMode")
    if mode in (None, "") and version.endswith("/v1"):
        raise Problem(f"user {user!r}: exec with apiVersion {version} needs an interactiveMode")
    mode = mode or "IfAvailable"
    if mode not in MODES:
        raise Problem(f"user {user!r}: exec interactiveMode {mode!r} is not one of {MODES}")
    args = body.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise Problem(f"user {user!r}: exec args is not a list of strings")
    env: list[tuple[str, str]] = []
    for entry in body.get("env") or []:
        name = entry.get("name") if isinstance(entry, dict) else None
        value = entry.get("value", "") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or not isinstance(value, str):
            raise Problem(f"user {user!r}: exec env entries need a name and a string value")
        env.append((name, value))
    provide = body.get("provideClusterInfo", False)
    hint = body.get("installHint") or ""
    if not isinstance(provide, bool) or not isinstance(hint, str):
        raise Problem(f"user {user!r}: exec provideClusterInfo/installHint has the wrong type")
    path = os.path.normpath(os.path.join(base, command)) if os.sep in command else command
    return Plugin(user, command, path, tuple(args), tuple(env), version, mode, provide, hint)


def exec_info(plugin: Plugin, interactive: bool, cluster: dict[str, Any] | None) -> str:
    """KUBERNETES_EXEC_INFO: the ExecCredential spec handed to the plugin."""
    spec: dict[str, Any] = {"interactive": interactive}
    if plugin.provide_cluster_info and cluster is not None:
        spec["cluster"] = cluster
    doc = {"kind": "ExecCredential", "apiVersion": plugin.api_version, "spec": spec}
    return json.dumps(doc, separators=(",", ":"))


def cluster_info(
    server: str,
    tls_server_name: str | None,
    insecure: bool,
    ca: bytes | None,
    proxy_url: str | None,
    disable_compression: bool,
    extensions: Any,
) -> dict[str, Any]:
    """spec.cluster for provideClusterInfo (client.authentication.k8s.io Cluster)."""
    info: dict[str, Any] = {"server": server}
    if tls_server_name:
        info["tls-server-name"] = tls_server_name
    if insecure:
        info["insecure-skip-tls-verify"] = True
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    if proxy_url:
        info["proxy-url"] = proxy_url
    if disable_compression:
        info["disable-compression"] = True
    config = _exec_extension(extensions)
    if config is not None:
        info["config"] = config
    return info


def _exec_extension(extensions: Any) -> Any:
    """The cluster's extension named client.authentication.k8s.io/exec (a list of
    {name, extension} in the file)."""
    if isinstance(extensions, list):
        for entry in extensions:
            if isinstance(entry, dict) and entry.get("name") == EXEC_EXTENSION:
                return entry.get("extension")
    return None


def run(plugin: Plugin, cluster: dict[str, Any] | None, deadline: float | None) -> Credential:
    """Run the plugin once and return its credential, or raise AuthError (exit 12) saying why,
    in one line. `deadline` is a time.monotonic() value: the plugin is killed at it."""
    stdin_tty = _stdin_is_terminal()
    if plugin.interactive_mode == "Always" and not stdin_tty:
        raise _failed(plugin, "needs a terminal (interactiveMode Always) and stdin is not one")
    interactive = plugin.interactive_mode != "Never" and stdin_tty
    executable = _executable(plugin)
    env = {**os.environ, **dict(plugin.env)}
    env["KUBERNETES_EXEC_INFO"] = exec_info(plugin, interactive, cluster)
    try:
        proc = subprocess.Popen(
            [executable, *plugin.args],
            stdin=None if interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=None if interactive else subprocess.PIPE,
            env=env,
            # its own process group, killed whole at the deadline (an interactive one must
            # stay in the terminal's foreground group to read it)
            start_new_session=not interactive,
        )
    except OSError as exc:
        raise _failed(plugin, f"could not be started: {exc.strerror or exc}") from exc
    with _running_lock:
        _running.add(proc)
    try:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            out, err = proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise _failed(
                plugin,
                f"did not finish within the {left:.0f}s left of the overall deadline "
                "(--deadline): killed",
            ) from None
    finally:
        if proc.poll() is None:  # Ctrl-C or anything else while waiting
            _kill(proc)
        with _running_lock:
            _running.discard(proc)
    message = _message(err)
    if proc.returncode != 0:
        how = (
            f"was killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else f"exited with code {proc.returncode}"
        )
        raise _failed(plugin, how + (f": {message}" if message else ""))
    credential = _credential(plugin, out)
    if err and not interactive:
        sys.stderr.write(err.decode("utf-8", "replace"))  # its warnings, as kubectl shows them
    return credential


def kill_all() -> None:
    """Kill every plugin still running (the CLI's watchdog, before it ends the process)."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        if proc.pid and os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)  # the plugin and whatever it started
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass
    with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL is not refused
        proc.wait(timeout=5)


def _stdin_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):
        return False


def _executable(plugin: Plugin) -> str:
    found = plugin.path if os.sep in plugin.path else shutil.which(plugin.path)
    if found is None or not os.path.exists(found):
        where = "does not exist" if os.sep in plugin.path else "is not on PATH"
        hint = plugin.install_hint.strip()
        raise _failed(
            plugin,
            f"is not installed: {plugin.path} {where}" + (f" ({hint})" if hint else ""),
        )
    return found


def _failed(plugin: Plugin, what: str) -> AuthError:
    return AuthError(
        f"getting credentials of user {plugin.user!r}: credential plugin {plugin.command!r} {what}",
        hint="nothing was sent to the cluster",
    )


def _message(err: bytes | None) -> str:
    """The plugin's own message: its stderr's lines, on one line."""
    if not err:
        return ""
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    text = one_line(" | ".join(lines))
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def _credential(plugin: Plugin, out: bytes) -> Credential:
    """The ExecCredential on stdout, checked as client-go checks it."""
    try:
        doc = json.loads(out)
    except (ValueError, RecursionError):
        text = _message(out)
        raise _failed(
            plugin,
            "printed something that is not an ExecCredential (JSON)"
            + (f": {text}" if text else ": nothing"),
        ) from None
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise _failed(plugin, "printed JSON that is not an ExecCredential")
    if doc.get("apiVersion") != plugin.api_version:
        raise _failed(
            plugin,
            f"answered with apiVersion {doc.get('apiVersion')!r}, configured for "
            f"{plugin.api_version!r}",
        )
    status = doc.get("status")
    if not isinstance(status, dict):
        raise _failed(plugin, "returned an ExecCredential without status")
    token = status.get("token") or None
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not all(isinstance(v, (str, type(None))) for v in (token, cert, key)):
        raise _failed(plugin, "returned a status whose token or certificate is not a string")
    if bool(cert) != bool(key):
        raise _failed(plugin, "returned a client certificate without its key, or a key alone")
    if not token and not cert:
        raise _failed(plugin, "returned neither a token nor a client certificate")
    return Credential(
        token=token,
        cert=cert.encode() if cert else None,
        key=key.encode() if key else None,
        expires=_expiry(plugin, status.get("expirationTimestamp")),
    )


def _expiry(plugin: Plugin, value: Any) -> float | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise _failed(plugin, "returned an expirationTimestamp that is not a string")
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _failed(plugin, f"returned expirationTimestamp {value!r}, not RFC 3339") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()

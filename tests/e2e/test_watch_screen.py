"""`diagnose --watch` in a real terminal (tmux) against the real control plane: on the alternate
screen, a node dies and returns and the change log says so with the API server's own times
("NotReady", "Ready again after Ns"); the API server is then cut off (a TCP relay in front of
it stops accepting: connection refused, as a dead VIP or a stopped apiserver) and the banner
says so with the data's age, then that it answers again; Ctrl-C gives the shell's screen
back with the change log printed under it. The relay decides nothing about Kubernetes: every
read goes to the real kube-apiserver."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import Plugin
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import wait_node_ready
from tests.tmux import pane

pytestmark = pytest.mark.e2e
NODE = "screen-a"


class Relay:
    """127.0.0.1:PORT relayed to the API server; cut() refuses connections (and drops the
    open ones), restore() accepts again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.open: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(32)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for sock in self.open:
            with contextlib.suppress(OSError):
                sock.close()
        self.open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)


def _relayed_kubeconfig(cp: ControlPlane, relay: Relay, path: Path) -> Path:
    config = cp.get_kubeconfig()
    for cluster in config["clusters"]:
        server = urlsplit(cluster["cluster"]["server"])
        cluster["cluster"]["server"] = f"{server.scheme}://127.0.0.1:{relay.port}"
    path.write_text(json.dumps(config))
    return path


def test_watch_screen_follows_a_node_and_an_api_outage(
    control_plane: ControlPlane, plugin: Plugin, tmp_path: Path
) -> None:
    cp = control_plane
    server = urlsplit(cp.get_kubeconfig()["clusters"][0]["cluster"]["server"])
    relay = Relay((server.hostname or "127.0.0.1", server.port or 443))
    env = {**plugin.env, "KUBECONFIG": str(_relayed_kubeconfig(cp, relay, tmp_path / "kc"))}
    cp.add_failable_node(NODE)
    wait_node_ready(cp, NODE)
    command = (
        f"echo before-the-watch; {cp.bindir / 'kubectl'} nodefail diagnose --watch --interval 1"
    )
    try:
        with pane(command, 120, 45, env) as p:
            p.wait_for("the first frame", lambda s: any("Ctrl-C to stop" in x for x in s), 60)
            assert p.alternate_on()
            cp.stop_kubelet(NODE)
            p.wait_for(
                "NotReady in the log", lambda s: any(f"{NODE} NotReady" in x for x in s), 120
            )
            cp.start_kubelet(NODE)
            back = p.wait_for(
                "Ready again in the log",
                lambda s: any(f"{NODE} Ready again after " in x for x in s),
                120,
            )
            said = next(x for x in back if f"{NODE} Ready again after " in x)
            assert re.search(rf"{NODE} Ready again after (about )?\d+(s|m\d*s?)$", said.strip())
            relay.cut()
            down = p.wait_for(
                "the outage banner",
                lambda s: any("!! API server unreachable for " in x for x in s),
                60,
            )
            banner = " ".join(x.strip() for x in down[:6])
            assert "Below: the cluster as read at " in banner, banner
            assert "HTTPSConnection" not in banner and "Errno" not in banner
            assert len(down) <= 45 and all(len(x) <= 120 for x in down)
            relay.restore()
            up = p.wait_for(
                "the server back",
                lambda s: any("API server answering again since " in x for x in s),
                60,
            )
            assert any("API server answering again after " in x for x in up)  # in the log
            p.keys("C-c")
            after = p.wait_for("the shell again", lambda s: any("exit=" in x for x in s), 30)
            assert not p.alternate_on()
    finally:
        relay.cut()
        cp.start_kubelet(NODE)
    assert after[0] == "before-the-watch"
    assert not any("Ctrl-C to stop" in x for x in after)  # no frame in the scrollback
    assert any(f"{NODE} NotReady" in x for x in after)
    assert any("API server unreachable" in x for x in after)
    code = next(x for x in after if x.startswith("exit="))
    assert code in ("exit=0", "exit=3"), after  # the last diagnosis's code

"""A list that breaks mid-pagination is read again from the start once, then is a gap (optional
reads) or an error (required reads).

A real API server answers 410 Gone to an expired continue token only after etcd compacted the
revision (minutes), so these tests use a tiny local HTTP server that does exactly that on cue:
the one thing a real one cannot be made to do quickly. Everything else the listing code does is
exercised by the e2e scenarios on the real control plane.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from kubectl_nodefail.cluster import gather, kube
from kubectl_nodefail.common.errors import ApiError, Exit

EXPIRED = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": "The provided continue parameter is too old to display a consistent list result.",
    "reason": "Expired",
    "code": 410,
}


class Pages:
    """Two pages of pods; the second answers 410 Gone `fail_times` times first."""

    def __init__(self, fail_times: int) -> None:
        self.fail_times = fail_times
        self.seen: list[str] = []

    def answer(self, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        cont = (query.get("continue") or [""])[0]
        self.seen.append(cont or "first")
        if not cont:
            return 200, {
                "kind": "PodList",
                "metadata": {"continue": "token-1"},
                "items": [{"metadata": {"name": "a", "namespace": "ns", "uid": "1"}}],
            }
        if self.fail_times > 0:
            self.fail_times -= 1
            return 410, EXPIRED
        return 200, {
            "kind": "PodList",
            "metadata": {},
            "items": [{"metadata": {"name": "b", "namespace": "ns", "uid": "2"}}],
        }


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(pages: Pages) -> kube.Cluster:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = pages.answer(parse_qs(urlparse(self.path).query))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        config = tmp_path / "kubeconfig"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "c",
                            "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"},
                        }
                    ],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        return kube.Cluster(str(config), None, timeout=5)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_expired_continue_token_restarts_the_list_once(serve: Any) -> None:
    pages = Pages(fail_times=1)
    cluster = serve(pages)
    items = cluster.list_all("/api/v1/pods", "Pod")
    assert [i["metadata"]["name"] for i in items] == ["a", "b"]  # no duplicate of page one
    assert pages.seen == ["first", "token-1", "first", "token-1"]
    assert all(i["kind"] == "Pod" for i in items)


def test_a_required_list_failing_twice_raises_its_error(serve: Any) -> None:
    pages = Pages(fail_times=2)
    cluster = serve(pages)
    with pytest.raises(ApiError) as err:
        cluster.list_all("/api/v1/pods", "Pod")
    assert err.value.status == 410
    assert err.value.exit_code == Exit.API
    assert "too old" in str(err.value)
    assert pages.seen == ["first", "token-1", "first", "token-1"]


def test_an_optional_list_failing_twice_is_a_stated_gap(serve: Any) -> None:
    cluster = serve(Pages(fail_times=2))
    reader = gather._Reader(cluster)
    got = reader.optional("events", lambda: cluster.list_all("/api/v1/events", "Event"), [])
    assert got == []
    assert len(reader.gaps) == 1
    assert reader.gaps[0].startswith("events: the list broke off twice mid-way")


def test_a_first_page_error_is_not_retried(serve: Any) -> None:
    class FirstFails(Pages):
        def answer(self, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
            self.seen.append("first")
            return 410, EXPIRED

    pages = FirstFails(0)
    cluster = serve(pages)
    with pytest.raises(ApiError):
        cluster.list_all("/api/v1/pods", "Pod")
    assert pages.seen == ["first"]  # nothing was read yet: not "mid-pagination"

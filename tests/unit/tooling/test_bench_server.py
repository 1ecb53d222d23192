"""bench/cluster.py's Server on a failed start: it says where the log is, and the log is
there (its reaper, which removes the folder when the benchmark dies, stands down first)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bench import cluster


def test_a_server_that_fails_to_start_keeps_the_log_it_names(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    etcd = bindir / "etcd"
    etcd.write_text("#!/bin/sh\necho 'etcd: cannot open the data folder' >&2\nexit 1\n")
    etcd.chmod(etcd.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "cp"
    work.mkdir()
    server = cluster.Server(bindir, work)
    with pytest.raises(RuntimeError, match=r"etcd did not start; see .*etcd\.log") as failed:
        server.start_etcd()
    log = Path(str(failed.value).rsplit("see ", 1)[1])
    assert "cannot open the data folder" in log.read_text()
    assert server.procs == [] and server._reaper is None  # stopped, reaper stood down
    assert os.path.isdir(work)

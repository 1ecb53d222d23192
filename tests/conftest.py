"""The order and grouping of the test modules, for a serial run and a parallel one (xdist).

Module order. By default the modules run in collection order, except that a module with a test
marked `session_start` goes first (and, in a serial run, its `session_end` tests last: a
scenario waiting on a long Kubernetes timer overlaps the rest of the suite). With
`--module-seed=N` the modules are shuffled with seed N, `--module-seed=random` picks a seed;
the tests inside a module keep their order (a module's scenario is a sequence). The seed is
printed in the header, and every xdist worker shuffles with the same one (xdist requires the
workers' collections to agree).

Parallel runs (`make test`: `pytest -n WORKERS`). The scheduler below hands out whole units of
work (work_group): a module, whose tests run in order on one worker; the modules of
SHARED_WORKER together; and a test module parametrized by Kubernetes minor (ids `k8s-...`, the
version matrix) one unit per minor, so the minors run side by side. Units go out in the order
above, one at a time as workers free up.
"""

from __future__ import annotations

import random
import re
import signal
from typing import Any

import pytest

# Modules that must run on one worker: the release modules share one release build
# (tests/e2e/release.py), and two builds at once in one checkout race on its build/ folder.
SHARED_WORKER = {
    "tests/e2e/test_release.py": "release",
    "tests/e2e/test_krew_manifest.py": "release",
}
MINOR_PARAM = re.compile(r"\[(k8s-[^\]]+)\]$")
SEED_KEY = pytest.StashKey[int | None]()
WORKER_INPUT = "nodefail_module_seed"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--module-seed",
        default=None,
        metavar="N|random",
        help="shuffle the order of the test modules with this seed (random: pick one); "
        "the tests inside each module keep their order",
    )


def _chosen_seed(config: pytest.Config) -> int | None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # an xdist worker: the controller's seed
        seed: int | None = workerinput.get(WORKER_INPUT)
        return seed
    value = config.getoption("module_seed")
    if value is None:
        return None
    if value == "random":
        return random.SystemRandom().randrange(10**6)
    try:
        return int(value)
    except ValueError:
        raise pytest.UsageError(
            f"--module-seed: {value!r} is neither a number nor 'random'"
        ) from None


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SEED_KEY] = _chosen_seed(config)
    _take_ctrl_c_back()


def _take_ctrl_c_back() -> None:
    """A suite started in the background by a non-interactive shell (`make test &`, a CI
    runner without job control) inherits SIGINT ignored, and so does every command a test
    starts: Python keeps an inherited SIG_IGN instead of raising KeyboardInterrupt, so a test
    that presses Ctrl-C on a command would wait for ever (found: the CI checks of 2026-12-01).
    Ctrl-C is taken back, as in a terminal; the commands the tests start then get the
    default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """xdist: each worker receives the controller's seed."""
    node.workerinput[WORKER_INPUT] = node.config.stash[SEED_KEY]  # type: ignore[attr-defined]


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[SEED_KEY]
    if seed is None:
        return "module order: as collected (shuffle with --module-seed=N or --module-seed=random)"
    return f"module order: shuffled with --module-seed={seed}"


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist turns the groups into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    by_module: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_module.setdefault(_module(item), []).append(item)
    order = list(by_module)
    seed = config.stash[SEED_KEY]
    if seed is not None:
        random.Random(seed).shuffle(order)
    # Modules that start a long timer go first (a stable sort keeps the order otherwise).
    order.sort(key=lambda m: not any(i.get_closest_marker("session_start") for i in by_module[m]))
    ordered = [item for module in order for item in by_module[module]]
    # In a serial run the checks of those timers wait until the end of the session.
    late = [i for i in ordered if i.get_closest_marker("session_end")]
    items[:] = [i for i in ordered if i not in late] + late


def work_group(nodeid: str) -> str:
    """The unit of work of a parallel run that this test belongs to (see the module's doc)."""
    path, _, rest = nodeid.partition("::")
    group = SHARED_WORKER.get(path, path)
    minor = MINOR_PARAM.search(rest)
    return f"{group}[{minor.group(1)}]" if minor else group


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist: whole units of work (work_group), in collection order (the module order chosen
    above), the next one sent to a worker only when it has one test left (the one it keeps
    until it knows what runs next): a long unit never waits behind another on a busy worker
    while a free worker idles."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_group(nodeid)

        def remove_node(self, node: Any) -> str | None:
            """A worker that died: xdist (3.8) would queue again every unit the worker was
            ever given, finished ones too, and the test that killed it. A finished unit handed
            out is an empty send: the worker that takes it keeps waiting on its last test, and
            so does the run, for ever (run z6 hung at 95 %). The test that killed one worker
            can kill the next. So only unfinished units go back, first in the queue, without
            the test that crashed (xdist reports that one failed). Upstream: pytest-xdist
            issues 1323, 1378 and pull request 1371."""
            workload = self.assigned_work.pop(node)
            unfinished = [(s, unit) for s, unit in workload.items() if not all(unit.values())]
            if not unfinished:
                return None
            crashed = next(nodeid for nodeid, done in unfinished[0][1].items() if not done)
            unfinished[0][1][crashed] = True
            for scope, unit in reversed(unfinished):
                if not all(unit.values()):
                    self.workqueue[scope] = unit
                    self.workqueue.move_to_end(scope, last=False)
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

        def _reschedule(self, node: Any) -> None:
            if node.shutting_down or node not in self.registered_collections:
                return  # a replacement still collecting: schedule() serves it once it has
            if not self.workqueue:
                node.shutdown()
                return
            # A worker keeps its last test until it knows what comes next: one test left
            # (or none, a worker just started) is when it needs another unit, and a unit of
            # one test leaves it there still (pytest-xdist issue 1327: a replacement worker
            # given one test waited for ever).
            while self.workqueue and self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    config.option.loadscopereorder = False  # keep the order chosen, not "most tests first"
    return UnitScheduling(config, log)


# When each unit of work ran and where, "unit\tworker" -> [first start, last stop] (epoch s).
_UNITS: dict[str, list[float]] = {}
SLOWEST_UNITS = 12


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remembers when each unit of work ran (and on which worker): a parallel run's length is
    its busiest worker's, so the summary shows the units and how full each worker was."""
    if not report.start:  # the report xdist makes up for a test whose worker crashed
        return
    worker = getattr(getattr(report, "node", None), "gateway", None)
    key = f"{work_group(report.nodeid)}\t{getattr(worker, 'id', '-')}"
    span = _UNITS.setdefault(key, [report.start, report.stop])
    span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)


def _units_summary(terminalreporter: pytest.TerminalReporter) -> None:
    units = _UNITS
    if not units:
        return
    first = min(start for start, _ in units.values())
    busy: dict[str, float] = {}
    for key, (start, stop) in units.items():
        worker = key.split("\t")[1]
        busy[worker] = busy.get(worker, 0.0) + stop - start
    terminalreporter.write_sep("=", f"slowest {SLOWEST_UNITS} units of work (module or minor)")
    slowest = sorted(units.items(), key=lambda kv: kv[1][0] - kv[1][1])[:SLOWEST_UNITS]
    for key, (start, stop) in slowest:
        unit, worker = key.split("\t")
        terminalreporter.write_line(
            f"{stop - start:7.1f}s  {worker:>4} from {start - first:6.1f}s  {unit}"
        )
    end = max(stop for _, stop in units.values())
    terminalreporter.write_line(
        f"workers busy (of {end - first:.0f}s): "
        + ", ".join(f"{w} {t:.0f}s" for w, t in sorted(busy.items()))
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The units of work, and the seed again at the end, where a failed run is read."""
    _units_summary(terminalreporter)
    seed = terminalreporter.config.stash[SEED_KEY]
    if seed is not None:
        terminalreporter.write_line(f"module order: shuffled with --module-seed={seed}")

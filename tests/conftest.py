"""The order and grouping of the test modules, for a serial run and a parallel one (xdist).

Module order. By default the modules run in collection order, except that a module with a test
marked `session_start` goes first (and, in a serial run, its `session_end` tests last: a
scenario waiting on a long Kubernetes timer overlaps the rest of the suite). With
`--module-seed=N` the modules are shuffled with seed N, `--module-seed=random` picks a seed;
the tests inside a module keep their order (a module's scenario is a sequence). The seed is
printed in the header, and every xdist worker shuffles with the same one (xdist requires the
workers' collections to agree).

Parallel runs (`make test`: `-n WORKERS --dist loadgroup`). Each test module is one unit of
work, an `xdist_group` named after the module, so its tests run in order on one worker; a
module may name its group itself (the release and krew modules share one release build), and
a parametrized module fixture may give each parameter its own group (the version matrix: one
group per Kubernetes minor, each with its own control plane).
"""

from __future__ import annotations

import random

import pytest

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
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_module(item)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The seed again at the end, where a failed run is read."""
    seed = terminalreporter.config.stash[SEED_KEY]
    if seed is not None:
        terminalreporter.write_line(f"module order: shuffled with --module-seed={seed}")

"""How a command runs and ends, for every command: its result and the tool's errors mapped onto
exit codes (one error line; a traceback only with -v), the overall deadline (--deadline) and its
watchdog, SIGTERM as an interruption while remediate reads and plans, the status line's
reporter, and the exit code checked against standard output having been written."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

import click

from kubectl_nodefail.common.errors import Exit, NodefailError
from kubectl_nodefail.term import closedpipe, printable, progress

DEFAULT_DEADLINE = 120.0  # seconds for a whole run; remediate adds its --wait-timeout
DEADLINE_GRACE = 1.0  # the hard stop, for waits nothing can interrupt (DNS); kills exec plugins
DEADLINE_KEY = "kubectl_nodefail.deadline"  # the run's time.monotonic() deadline, in ctx.meta
WATCHDOG_KEY = "kubectl_nodefail.watchdog"  # lifted while remediate executes (see _execute)
DEADLINE_SECONDS_KEY = "kubectl_nodefail.deadline_seconds"  # --deadline, for --watch
VERBOSE_KEY = "kubectl_nodefail.verbose"  # -v: the budget is printed however the run ends


def handle_errors(fn: Callable[..., int]) -> Callable[..., None]:
    """Run a command body; map its result and the tool's errors onto exit codes.

    Also holds the overall deadline (--deadline): requests see it through the click context,
    and a watchdog ends the run with exit 11 should a wait that nothing can interrupt (a name
    lookup, a credential plugin) outlast it.
    """

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        verbose = kwargs.get("verbose", 0)
        click.get_current_context().meta[VERBOSE_KEY] = verbose
        _quiet_libraries(verbose)
        seconds = _deadline_seconds(kwargs)
        watchdog = None
        if seconds is not None:
            click.get_current_context().meta[DEADLINE_KEY] = time.monotonic() + seconds
            watchdog = _Watchdog(seconds)
            click.get_current_context().meta[WATCHDOG_KEY] = watchdog
            click.get_current_context().meta[DEADLINE_SECONDS_KEY] = seconds
        try:
            code = fn(*args, **kwargs)
        except NodefailError as exc:
            if verbose >= 2:
                _print_traceback()
            # an interruption before any change: not after the reads still in flight
            now = exc.exit_code == Exit.INTERRUPTED
            _fail(f"error: {exc.line()}", int(exc.exit_code), watchdog, now=now)
        except KeyboardInterrupt:
            _fail("interrupted", int(Exit.CTRL_C), watchdog, now=True)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # a bug: one line unless asked for more
            if verbose:
                _print_traceback()
            _fail(
                f"error: internal error: {type(exc).__name__}: {_first_line(exc)} "
                "(rerun with -v for the traceback)",
                int(Exit.INTERNAL),
                watchdog,
            )
        finally:
            if watchdog is not None:
                watchdog.cancel()
            if verbose:
                _print_budget()
        sys.exit(int(code))

    return wrapper


def _print_budget() -> None:
    """-v: what the run asked of the API server, per resource (cluster/budget.py), on stderr
    after everything else; nothing for a run that sent no request."""
    from kubectl_nodefail.cluster.kube import Cluster

    for line in Cluster.budget.lines():
        click.echo(printable.text(line), err=True)  # paths are ours, names may not be


def _print_traceback() -> None:
    traceback.print_exc()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


def _fail(line: str, code: int, watchdog: _Watchdog | None, now: bool = False) -> None:
    """Print the one error line and exit, unless the watchdog already said it. `now`: at once
    (see `leave_now`)."""
    if watchdog is None or watchdog.claim():
        progress.done()  # the status line, erased before the error line
        click.echo(printable.text(line), err=True)  # it may quote the cluster: escaped
    if now:
        leave_now(code)
    sys.exit(code)


def leave_now(code: int) -> None:
    """Exit without waiting for the requests still in flight on other threads (Python's exit
    would join them: up to --request-timeout after a Ctrl-C). Those are reads: remediate's
    changes are sent from the main thread, whose `finally` blocks (trail log, node locks) have
    run by the time a KeyboardInterrupt gets here, and a Ctrl-C during its execution is
    actions.Stop's, not this. -v's budget is printed first (handle_errors' own is skipped)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(VERBOSE_KEY):
        _print_budget()
    sys.stdout.flush()
    code = with_output_checked(code)
    sys.stderr.flush()
    os._exit(code)


# The codes that only report an outcome the output carries: with the output incomplete (a full
# disk) they become 2. Any other (a partial remediate, an interruption, an error) says more
# than "the output is incomplete" and is kept; the line is said either way.
_OUTCOME_ONLY = (Exit.OK, Exit.PROBLEMS_FOUND, Exit.NOTHING_TO_DO)


def with_output_checked(code: int) -> int:
    """The exit code once standard output is known to be written or not (closedpipe)."""
    why = closedpipe.output_failed()  # a full disk under `> file`: not a bug
    if why is None:
        return code
    progress.done()
    click.echo(f"error: {why}: the output is incomplete", err=True)
    return int(Exit.USAGE) if code in _OUTCOME_ONLY else code


def _deadline_seconds(kwargs: dict[str, Any]) -> float | None:
    """The run's deadline in seconds: --deadline, or the default (plus remediate's wait)."""
    if "deadline" not in kwargs:
        return None
    given = kwargs.pop("deadline")
    if given is not None:
        return float(given) or None  # 0: no deadline, as for --request-timeout
    return DEFAULT_DEADLINE + float(kwargs.get("wait_timeout") or 0)


class _Watchdog:
    """Ends the process with exit 11 and one line if the run outlasts its deadline.

    Requests stop themselves before the deadline (kube.Cluster cuts every timeout to it);
    this is the backstop for waits that cannot be cut, DEADLINE_GRACE seconds later. Exactly
    one error line is printed: whoever claims the line first says it.
    """

    # How the process ends when the deadline passes: at once, whatever the other threads do.
    # An in-process test runner (click's CliRunner under a pytest-xdist worker) would die with
    # it: the unit tests' conftest sets a no-op (the command's own path then ends it, 11 too).
    leave: Callable[[int], None] = staticmethod(os._exit)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._said = False
        self._timer = threading.Timer(seconds + DEADLINE_GRACE, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def claim(self) -> bool:
        with self._lock:
            if self._said:
                return False
            self._said = True
            return True

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        if not self.claim():
            return
        plugins = sys.modules.get("kubectl_nodefail.cluster.credplugin")
        if plugins is not None:
            plugins.kill_all()  # no credential plugin outlives the command
        progress.done()
        sys.stdout.flush()
        sys.stderr.write(
            f"error: the run did not finish within the overall deadline of {self.seconds:g}s "
            "(raise --deadline, or check the cluster and the network)\n"
        )
        sys.stderr.flush()
        type(self).leave(int(Exit.UNREACHABLE))


def _quiet_libraries(verbose: int) -> None:
    """Keep the client libraries' own log lines off stderr: our one line says it.

    The kubernetes client logs a failing exec credential plugin through the root logger
    (`logging.error`), which would print `ERROR:root:...` next to our message. With -vv their
    logs are shown.
    """
    import logging

    root = logging.getLogger()
    if verbose >= 2:
        logging.basicConfig(level=logging.DEBUG if verbose > 2 else logging.WARNING)
        return
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())  # logging.error() then never calls basicConfig
    for name in ("kubernetes", "urllib3"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def reporter(verbose: int) -> Callable[[str], None]:
    """The progress of a run's reads and steps: term.progress's reporter for this -v."""
    return progress.reporter(verbose)


@contextlib.contextmanager
def sigterm_interrupts(on: bool) -> Iterator[None]:
    """While remediate --confirm reads and plans, SIGTERM stops it as Ctrl-C does (exit 6,
    nothing done) instead of killing it mid-way."""
    if not on:
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

"""actions.Stop: the first SIGINT/SIGTERM asks the run to stop after the request in flight, the
second abandons it; the previous handlers come back afterwards."""

from __future__ import annotations

import os
import signal

import pytest

from kubectl_nodefail.remediate.actions import Stop


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_first_signal_sets_the_flag_second_abandons(sig: signal.Signals) -> None:
    said: list[str] = []
    before = signal.getsignal(sig)
    with Stop().on_signals(said.append) as stop:
        assert not stop.is_set()
        os.kill(os.getpid(), sig)
        assert stop.is_set() and stop.wait(0)
        assert said and sig.name in said[0] and "after the request in flight" in said[0]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), sig)
            stop.wait(1)  # the handler runs at the latest here
        os.kill(os.getpid(), sig)  # a third one is ignored
        stop.wait(0.05)
    assert signal.getsignal(sig) == before

"""harness/interrupts.py: a signal's Interrupted that third-party code swallowed is raised again."""

import os
import signal
import time

import pytest

from harness.errors import Interrupted
from harness.interrupts import raise_if_interrupted, signals_raise_interrupted


def swallowing(call):
    """As third-party code that catches Exception around the moment a signal's handler runs."""
    try:
        call()
    except Exception:  # noqa: BLE001 - what Ray's own code does in places
        pass


def test_a_swallowed_interrupt_is_raised_again_where_our_code_resumes():
    with signals_raise_interrupted():
        swallowing(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.05)))
        with pytest.raises(Interrupted) as raised:
            raise_if_interrupted()
    assert raised.value.exit_code == 143


def test_nothing_is_raised_without_a_signal_or_outside_a_block():
    with signals_raise_interrupted():
        raise_if_interrupted()
    raise_if_interrupted()


def test_an_inner_block_answers_for_itself_and_the_outer_one_after_it():
    with signals_raise_interrupted():
        with signals_raise_interrupted():
            raise_if_interrupted()  # nothing received yet
        swallowing(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.05)))
        with pytest.raises(Interrupted):
            raise_if_interrupted()

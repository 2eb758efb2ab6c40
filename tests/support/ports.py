"""Serial ports that lie: a real pseudo-terminal, opened with pyserial, whose far end a
thread drives (``lying_port``), and ways for it to talk."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def lying_port():
    """``start(talk)``: the path of a serial port (a pseudo-terminal) whose far end a thread
    drives with ``talk(write, stop)`` until the test ends."""
    import pty
    import threading
    import tty

    primary, secondary = pty.openpty()
    tty.setraw(secondary)
    stop = threading.Event()
    threads = []

    def start(talk) -> str:
        def drive():
            while not stop.is_set():
                talk(lambda data: os.write(primary, data), stop)

        threads.append(threading.Thread(target=drive, daemon=True))
        threads[-1].start()
        return os.ttyname(secondary)

    yield start
    stop.set()
    for thread in threads:
        thread.join(timeout=5)
    os.close(primary)
    os.close(secondary)


def babble(write, stop):  # bytes without end, never a SYNC
    write(b"\x00\x11" * 256)
    stop.wait(0.001)


def trickle(write, stop):  # a frame claiming 65,535 bytes, one byte at a time
    from brainsmith.hardware.board.link import RESULT, SYNC

    write(bytes([SYNC, RESULT, 1, 0xFF, 0xFF]))
    while not stop.wait(0.05):
        write(b"\x00")

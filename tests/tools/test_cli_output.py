"""The command line's stdout closed by its reader (``symcc-ulfm targets | head -1``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def test_a_reader_that_went_away_ends_the_command_quietly_with_sigpipes_status():
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE (Python ignores SIGPIPE)
    try:
        done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "targets"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr
    assert done.stderr == ""  # no traceback, no "Exception ignored" from the last flush

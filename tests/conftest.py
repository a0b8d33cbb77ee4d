import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

HOST_WIDE = "host_wide"


def pytest_configure(config):
    """A shell starts a background command (``make test &``, ``nohup``) with SIGINT ignored, and
    children inherit that: the tests that Ctrl-C a ``launch`` or a ``watch`` need the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Groups for pytest-xdist's ``--dist loadgroup`` (``make test`` runs two workers): a test file
    runs on one worker, so its module fixtures are built once, and the tests marked ``host_wide``
    (network namespaces, ipyparallel's profile root) form one group, so no two of them run at once."""
    for item in items:
        group = HOST_WIDE if item.get_closest_marker(HOST_WIDE) else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))

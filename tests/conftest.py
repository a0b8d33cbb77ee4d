import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

from helpers.master_invariants import checked  # noqa: E402

from symcc_ulfm.core.master.machine import MasterState  # noqa: E402

# No property test's verdict may depend on how fast an example runs (Hypothesis' default 200-ms
# deadline does) or on which examples a run happens to draw: examples come from a fixed seed.
settings.register_profile("suite", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("suite")

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
    (network namespaces, ipyparallel's profile root) form one group, so no two of them run at once.
    xdist reads the marks by renaming each item's node id, which pytest 9.2 no longer lets it do:
    pytest is pinned, and tests/tools/test_suite_groups.py checks that the groups hold."""
    for item in items:
        group = HOST_WIDE if item.get_closest_marker(HOST_WIDE) else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def master_invariants(monkeypatch):
    """Every master state machine a test drives in this process checks its invariants after each
    event it handles (``helpers.master_invariants``)."""
    monkeypatch.setattr(MasterState, "handle", checked(MasterState.handle))

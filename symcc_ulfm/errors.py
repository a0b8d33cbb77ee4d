"""One exception tree for the whole package.

Every error the package raises on purpose derives from :class:`SymccUlfmError` and carries an
``exit_code``. Only :mod:`symcc_ulfm.cli.main` turns them into process exits; library code raises.

Exit codes (also listed in docs/campaigns.md and, in short, in every command's ``--help``):

== ==========================================================================================
0  success: the campaign reached its deadline and the oracle passed / the check passed
1  a check failed: oracle, verifier, campaign outcome
2  bad input: policy, file mode, failure schedule, host spec, target that matches nothing, a
   harness whose afl build failed (``symcc-ulfm build``), a state
   whose policy, deadline, membership snapshot or layout cannot be read as its owner wrote it
3  a matrix finished its report but at least one cell failed internally
4  integrity: a tampered corpus object, a corrupted WAL record, tampered evidence
5  a capability missing: ULFM (or inconsistent across ranks: fail closed, never plain MPI), or
   the namespaces that isolate target code
6  provenance changed since it was sealed: refuse to run
7  durable store failure (I/O error while writing state, a full disk)
8  a campaign is running on the state: a verdict or an export would be of a state that still changes
70 internal error (a bug: EX_SOFTWARE)
1xx ``launch`` ended by a signal: 128 + its number (130 SIGINT, 129 SIGHUP, 143 SIGTERM); the job
   was stopped with it and ``--resume`` continues the campaign
== ==========================================================================================
"""

from __future__ import annotations


class SymccUlfmError(Exception):
    """Base of every deliberate error of the package."""

    exit_code = 70


class CheckFailed(SymccUlfmError):
    """An oracle, verifier or campaign outcome did not pass."""

    exit_code = 1


class ConfigError(SymccUlfmError):
    """Bad user input; the message names the field and the accepted form."""

    exit_code = 2

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class PolicyError(ConfigError):
    """An invalid campaign policy value."""


class ModeError(ConfigError):
    """An invalid file-mode string (SYMCC_ULFM_SNAPSHOT_FILE_MODE / SYMCC_SHARED_CORPUS_FILE_MODE)."""


class ScheduleError(ConfigError):
    """An invalid failure schedule."""


class HostSpecError(ConfigError):
    """An invalid host specification."""


class TargetError(ConfigError):
    """A target that cannot be resolved (explicit targets matching nothing exit 2)."""


class BuildFailed(TargetError):
    """A build of a harness (``symcc-ulfm build``) that failed: which build, and why in its
    compiler's last lines."""


class DamagedState(ConfigError):
    """A state whose ``policy.json``, ``deadline.json``, membership snapshot, layout or receipt
    its owner refuses when a command opens the state (``store.state_files``): the message names
    the file and why. Bad input like a bad option (exit 2): no command reads on from such a state."""


class MatrixCellsFailed(SymccUlfmError):
    """The matrix report was written, but some cells failed internally."""

    exit_code = 3


class IntegrityError(SymccUlfmError):
    """Stored bytes do not match what they claim to be."""

    exit_code = 4


class CorpusIntegrityError(IntegrityError):
    """A corpus object whose name is not the SHA-256 of its bytes, or a conflicting publish."""


class WalCorruption(IntegrityError):
    """A torn, partial or tampered WAL record."""


class SnapshotCorruption(IntegrityError):
    """A membership snapshot, receipt or layout file that fails its checks."""


class EvidenceTampered(IntegrityError):
    """A sealed run whose files no longer match SHA256SUMS.txt."""


class CapabilityError(SymccUlfmError):
    """ULFM is missing, not enabled, or the ranks disagree: fail closed."""

    exit_code = 5


class ProvenanceChanged(SymccUlfmError):
    """Sources, inputs or tools differ from the sealed provenance."""

    exit_code = 6


class StoreError(SymccUlfmError):
    """A durable write or read failed; the store never swallows these."""

    exit_code = 7


class CampaignRunning(SymccUlfmError):
    """A launch or the ranks of a job hold the state directory: it is still changing."""

    exit_code = 8


class UnsafeFile(IntegrityError, StoreError):
    """A file of a state or run directory that is not what a reader may open: a symbolic link, a
    FIFO, a device or a directory where a regular file belongs, or one larger than its bound.

    Refused before a byte is read (exit 4, naming the file); it is also a :class:`StoreError`,
    so code that gives up on an unreadable store gives up on it too."""

    exit_code = 4


class MembershipConflict(StoreError):
    """A pending recovery plan that is incompatible with the discovered one (state fork)."""


class FenceError(SymccUlfmError):
    """A generation/shard/lease token that is not current: the message or result is rejected."""


class StaleGeneration(FenceError):
    """A result or record from an older generation."""


class ProtocolError(SymccUlfmError):
    """A malformed, oversized or unexpected message; rejected and logged, never executed."""


class RecoveryTimeout(SymccUlfmError):
    """A bounded wait in the recovery sequence expired."""

    exit_code = 1


class Interrupted(SymccUlfmError):
    """``launch`` received SIGINT, SIGTERM or SIGHUP: the job was stopped with it (exit 128 + N)."""

    def __init__(self, signum: int, name: str):
        self.exit_code = 128 + signum
        super().__init__(f"{name} received; the job was stopped with launch, --resume continues the campaign")


class ExecutorError(SymccUlfmError):
    """The executor itself (not the target it runs) failed; reported with the work, never a finding."""


def rebuild(name: str, message: str, exit_code: int) -> SymccUlfmError:
    """An error reported by another process (the sandbox child) as its class name and message."""
    cls = globals().get(name)
    if isinstance(cls, type) and issubclass(cls, SymccUlfmError):
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        if isinstance(error, ConfigError):
            error.field = message.partition(":")[0]
        return error
    error = ExecutorError(f"{name}: {message}")
    error.exit_code = exit_code if type(exit_code) is int and 0 < exit_code < 256 else 70
    return error

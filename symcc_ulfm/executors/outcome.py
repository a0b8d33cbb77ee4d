"""What one execution of a target did, and the signature that deduplicates findings.

Every execution has an :class:`Outcome`: ``ok``, ``exception`` (an uncaught exception the user
did not declare expected), ``crash`` (a signal, an abnormal exit, a sanitizer report), ``hang``
(the time limit), ``oom`` (the memory limit) or ``protocol`` (the sandbox child that executed it
answered with a frame that is not what its type says: :func:`protocol`). Anything but ``ok`` is a
finding; findings are deduplicated by ``(kind, signature)``.

Signatures come from the innermost frames of the *target's own code* (the files the target is
traced in), as crash triage tools bucket by the top of the stack: the innermost frame with its
line and the qualified name of its caller, e.g. ``ZeroDivisionError at tokenizer.py:Parser.term:97
< Parser.expression``. A hang is bucketed by function (where an endless loop was interrupted
varies from run to run); a death by a signal gets the frames the child's ``faulthandler``
printed, when there are any. A sanitizer's report is bucketed as ClusterFuzz buckets crashes, by
its *crash state* (:func:`sanitizer_state`): the sanitizer, the bug type and the function names of
the top three frames of the target's own code, e.g. ``AddressSanitizer: SEGV in parse_record <
LLVMFuzzerTestOneInput``; never a path, line, address, module offset or BuildId, so a rebuild (at
another path, with other optimisation flags) finds the same bug again, not a new one. Everything
here is pure: it parses and formats, it runs nothing.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.finding import KINDS, MAX_DETAIL, MAX_SIGNATURE, TERMINAL_KINDS

_DUMP_FRAME = re.compile(r'^\s*File "(.+)", line (\d+) in (.+?)\s*$')
# a frame of a sanitizer's stack: "#3 0x55d0c1 in parse(char*, int) /src/p.c:12:5" or, unsymbolized,
# "#3 0x55d0c1 in parse (/out/p+0x1234) (BuildId: 9f...)" or "#3 0x55d0c1  (/out/p+0x1234)"
_SANITIZER_FRAME = re.compile(r"^\s*#\d+\s+0x[0-9a-fA-F]+\s+(.*?)\s*$")
_BUILD_ID = re.compile(r"\s*\(BuildId: [0-9a-fA-F]+\)$")
_MODULE_OFFSET = re.compile(r"\s*\([^()]*\+0x[0-9a-fA-F]+\)$")
_SOURCE_PLACE = re.compile(r"\s+\S*(?:/\S*|:\d+(?::\d+)?)$")  # a path, or a file:line[:column]
# frames of the sanitizer runtimes, libc's start-up and the fuzzing engine: not the target's own code
_RUNTIME_FRAMES = ("__asan", "__ubsan", "__sanitizer", "__interceptor_", "__msan", "__lsan", "__tsan", "__hwasan",
                   "__libc_start", "_start", "fuzzer::")
_ALLOCATORS = frozenset({"malloc", "calloc", "realloc", "free", "operator new", "operator delete", "operator new[]",
                         "operator delete[]"})  # where a leak's or a double free's stack begins: the runtime's
HARNESS_ENTRY = "LLVMFuzzerTestOneInput"  # the frames below it are the driver's, which differ by build
STATE_FRAMES = 3  # frames of a crash state, as ClusterFuzz's
_NUMBER = re.compile(r"\b(?:0x[0-9a-fA-F]+|\d+)\b")


@dataclass(frozen=True)
class Frame:
    filename: str
    function: str  # the qualified name where the interpreter gives it, else the plain name
    line: int

    def where(self, with_line: bool = True) -> str:
        base = os.path.basename(self.filename)
        return f"{base}:{self.function}:{self.line}" if with_line else f"{base}:{self.function}"


@dataclass(frozen=True)
class Outcome:
    kind: str = "ok"
    signature: str = ""
    detail: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown outcome kind {self.kind!r}")

    @property
    def is_finding(self) -> bool:
        return self.kind != "ok"

    @property
    def terminal(self) -> bool:
        return self.kind in TERMINAL_KINDS

    def to_json(self) -> dict:
        return {"kind": self.kind, "signature": self.signature, "detail": self.detail}

    def report(self, sha256: str) -> dict:
        """The finding report of the input ``sha256`` (``core.finding``)."""
        return {**self.to_json(), "sha256": sha256}

    @classmethod
    def from_json(cls, value: dict) -> Outcome:
        return cls(str(value["kind"]), str(value.get("signature", "")), str(value.get("detail", "")))


OK = Outcome()


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def located(head: str, frames: list[Frame], with_line: bool = True) -> str:
    """``head at innermost < caller`` from innermost-first target frames (just ``head`` without)."""
    if not frames:
        return clip(head, MAX_SIGNATURE)
    text = f"{head} {'at' if with_line else 'in'} {frames[0].where(with_line)}"
    caller = next((f for f in frames[1:] if f.function != frames[0].function), None)
    if caller is not None:
        text += f" < {caller.function}"
    return clip(text, MAX_SIGNATURE)


def traceback_frames(tb, files: frozenset[str] | set[str]) -> list[Frame]:
    """The frames of a traceback that run the target's own code, innermost first."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            out.append(Frame(code.co_filename, code.co_qualname, tb.tb_lineno))
        tb = tb.tb_next
    out.reverse()
    return out


def exception_detail(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # a target's __str__ may raise too
        message = "<unprintable>"
    name = type(exc).__name__
    return clip(f"{name}: {message}" if message else name, MAX_DETAIL)


def from_exception(kind: str, exc: BaseException, files: frozenset[str] | set[str]) -> Outcome:
    """An ``exception``, ``oom`` or ``hang`` outcome of a Python exception raised by the target."""
    frames = traceback_frames(exc.__traceback__, files)
    if kind == "hang":
        return Outcome("hang", located("hang", frames, with_line=False), "time limit of one execution")
    return Outcome(kind, located(type(exc).__name__, frames), exception_detail(exc))


def dump_frames(text: str, files: Iterable[str] | None = None) -> list[Frame]:
    """Frames of the last Python stack ``faulthandler`` wrote into ``text``, innermost first.

    ``faulthandler`` prints "most recent call first": the current thread's block starts with
    ``Current thread 0x...`` (fatal signals, ``register``) or ``Stack (most recent call
    first):`` (``dump_traceback`` of one thread). Only frames in ``files`` are kept when any of
    them is there; else every frame, so a crash inside a library the target called is located.
    """
    starts = [text.rfind(marker) for marker in ("Current thread ", "Stack (most recent call first):")]
    start = max(starts)
    if start < 0:
        return []
    frames = []
    for line in text[start:].splitlines()[1:]:
        match = _DUMP_FRAME.match(line)
        if not match:
            break
        frames.append(Frame(match[1], match[3], int(match[2])))
    wanted = set(files or ())
    own = [f for f in frames if f.filename in wanted or os.path.abspath(f.filename) in wanted]
    return own or frames


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def sanitizer_summary(stderr: str) -> str | None:
    """The last ``SUMMARY:`` line a sanitizer (ASan, UBSan, MSan, ...) printed, if any."""
    found = None
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("SUMMARY: ") and "Sanitizer" in line:
            found = line[len("SUMMARY: "):]
    return found


def sanitizer_state(stderr: str) -> str | None:
    """The crash state of the last sanitizer report in ``stderr`` (None without a ``SUMMARY:``
    line): ``<Sanitizer>: <type> in f1 < f2 < f3``. The type is the summary's bug type (UBSan's:
    its first ``runtime error:``, up to a colon), numbers in it as ``N``; the frames are the first
    stack's, innermost first, without the sanitizer runtimes', the allocators' and the start-up's,
    ending at ``LLVMFuzzerTestOneInput`` (the driver below it differs between builds); each is a
    function name without its parameters. The stack is the one after the report's ``ERROR:`` line (UBSan's:
    after its runtime error), so what another sanitizer printed before does not count. A report
    without symbolized frames falls back to the function the summary names (unless a runtime's),
    else to its source file's base name."""
    summary = sanitizer_summary(stderr)
    if summary is None:
        return None
    sanitizer, _, rest = summary.partition(": ")
    words = []
    for word in rest.split():
        if word == "in" or word.startswith(("/", "(", "<")) or ":" in word or "+0x" in word:
            break
        words.append(word)
    kind = " ".join(words)
    ub = stderr.find("runtime error: ")
    if sanitizer == "UndefinedBehaviorSanitizer" and ub >= 0:
        kind = stderr[ub + len("runtime error: "):].split("\n", 1)[0].split(":", 1)[0]
    head = clip(f"{sanitizer}: {_NUMBER.sub('N', kind)}".rstrip(), MAX_SIGNATURE // 2)
    start = stderr.rfind(f"ERROR: {sanitizer}:")  # its report's stack, after what other sanitizers printed
    if sanitizer == "UndefinedBehaviorSanitizer":
        start = ub
    frames = _state_frames(stderr[max(0, start):]) or _summary_place(rest)
    return clip(f"{head} in {' < '.join(frames)}" if frames else head, MAX_SIGNATURE)


def _summary_place(rest: str) -> list[str]:
    """Where a summary without a usable stack says the bug is: the function it names, else the
    base name of its source file (``SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior
    /src/p.c:12:5 in``), else nothing."""
    function = _function_name(rest.rsplit(" in ", 1)[1]) if " in " in rest else ""
    if function and not function.startswith(_RUNTIME_FRAMES) and function not in _ALLOCATORS:
        return [function]
    places = [word for word in rest.split() if re.fullmatch(r"\S+:\d+(?::\d+)?", word)]
    return [os.path.basename(places[0].split(":", 1)[0])] if places else []


def _state_frames(stderr: str) -> list[str]:
    """The function names of the first stack of a sanitizer report that make its crash state."""
    names: list[str] = []
    started = False
    for line in stderr.splitlines():
        match = _SANITIZER_FRAME.match(line)
        if match is None:
            if started:
                break
            continue
        started = True
        where = match[1]
        if not where.startswith("in "):
            continue  # not symbolized: an address in a module only
        name = _function_name(where[3:])
        if not name or name.startswith(_RUNTIME_FRAMES) or name in _ALLOCATORS:
            continue
        names.append(name)
        if name == HARNESS_ENTRY or len(names) == STATE_FRAMES:
            break
    return names


def _function_name(text: str) -> str:
    """A frame's function name: without its BuildId, module and offset, source place and parameters."""
    text = _MODULE_OFFSET.sub("", _BUILD_ID.sub("", text.strip()))
    text = _SOURCE_PLACE.sub("", text).strip()
    if text.endswith(" const"):
        text = text[: -len(" const")]
    if text.endswith(")"):  # C++: the parameter list, which may nest
        depth = 0
        for index in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[index], 0)
            if depth == 0:
                text = text[:index] if index > 0 else text
                break
    return text.strip()


def protocol(what: str, detail: str = "") -> Outcome:
    """The outcome of an input whose sandbox child broke the pipe protocol: ``what`` names the
    problem (``result frame: inconsistent``), ``detail`` its particulars."""
    return Outcome("protocol", clip(f"sandbox reply: {what}", MAX_SIGNATURE), clip(detail, MAX_DETAIL))


def death(how: str, stderr: str = "", files: Iterable[str] | None = None, kind: str = "crash") -> Outcome:
    """The outcome of a process that died (``how``: ``SIGSEGV``, ``exit 3``, ``hang``...)."""
    summary = sanitizer_summary(stderr)
    if summary is not None:
        return Outcome("crash", sanitizer_state(stderr), clip(f"{how}: {summary}", MAX_DETAIL))
    frames = dump_frames(stderr, files)
    if kind == "hang":
        return Outcome("hang", located("hang", frames, with_line=False), clip(how, MAX_DETAIL))
    return Outcome(kind, located(how, frames), clip(how, MAX_DETAIL))

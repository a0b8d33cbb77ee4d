"""The two contracts a contained kind is (:class:`.parent.Sandbox` is the containment):
:class:`SandboxedExecutor`, an :class:`~..base.Executor`, and :class:`SandboxedFuzzer`, a
:class:`~..base.Fuzzer`. What each keeps across its children: the executor the record of tried
branches (handed whole to a child forked after a death), the fuzzer every input offered to it
(offered again to such a child before its next slice)."""

from __future__ import annotations

from typing import Any

from ...core.slices import is_descriptor
from ..base import Executor, Fuzzer, RunResult
from .forkserver import ChildDied
from .parent import CHUNK_INPUTS, Sandbox


class SandboxedExecutor(Sandbox, Executor):
    """An executor contained in a child process."""

    def seeds(self) -> list[bytes]:
        self._wait_ready()
        return list(self._seeds)

    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        return self._run(data, hint, mutate, sliced=False)

    def learn(self, tried: list[int]) -> None:
        """Kept here and handed to the child with its next run; a child forked after a death is
        handed the whole record again."""
        if self._record is None:
            self._record = []
        self._record.extend(tried)

    def _restart(self) -> None:
        super()._restart()
        self._taught = 0


class SandboxedFuzzer(Sandbox, Fuzzer):
    """A fuzzer contained in a child process; the inputs offered to it are offered again to the
    child forked after a death."""

    def __init__(self, *args, **kwargs):
        self._offered: list[bytes] = []  # every input offered (a fuzzer's pool): offered again to a new child
        self._reoffer = False  # a child died since: the next slice offers them all first
        super().__init__(*args, **kwargs)

    def fuzz(self, descriptor: dict[str, Any]) -> RunResult:
        """The child's fuzzer for the slice of ``descriptor`` (a ``run`` request without an
        input; its limit is the slice's seconds more). What is not a descriptor is the child's
        fuzzer's to refuse."""
        if self._reoffer:
            self._reoffer = False
            self._send_offer(self._offered)
        return self._run(b"", descriptor, True, sliced=is_descriptor(descriptor))

    def offer(self, inputs: list[bytes]) -> None:
        """Hand the child's fuzzer inputs; kept, so that a child forked after a death gets them all."""
        inputs = [bytes(data) for data in inputs]
        self._offered += inputs
        self._send_offer(inputs)

    def _send_offer(self, inputs: list[bytes]) -> None:
        for pos in range(0, len(inputs), CHUNK_INPUTS):
            chunk = inputs[pos:pos + CHUNK_INPUTS]
            try:
                message, _ = self._exchange({"type": "offer"}, chunk, None, "offered", self.run_limit_s)
                if message["count"] != len(chunk):
                    raise ChildDied(self._refused("offered frame: inconsistent", f"{message['count']} of {len(chunk)}"))
            except ChildDied:
                self._restart()
                return

    def _restart(self) -> None:
        super()._restart()
        self._reoffer = bool(self._offered)

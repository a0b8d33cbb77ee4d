"""SymCC's fuzzing helper (``util/symcc_fuzzing_helper``, Rust) re-implemented in Python, as a baseline.

    python -m benchmarks.helper_baseline -o AFL_OUT -a FUZZER -n NAME [--twin AFL_BIN] -- SYMCC_BIN [ARGS]

Used by ``bench_hybrid.py`` when the Rust helper does not build. It behaves as upstream's helper
documents and does, one process, until it is killed:

* it takes its inputs from one AFL instance's queue (``AFL_OUT/FUZZER/queue``): each round the
  best entry it has not analyzed yet, best = the name ends in ``+cov`` (AFL saw new coverage),
  then the name holds ``orig:`` (a seed), then smaller, then the name; with none left it sleeps
  5 s;
* it runs the SymCC binary on it (the input on stdin, or in the file ``@@`` names) under
  ``timeout -k 5 90``, with ``SYMCC_ENABLE_LINEARIZATION=1`` and one QSYM coverage map
  (``SYMCC_AFL_COVERAGE_MAP``) for all its runs, in ``AFL_OUT/NAME/``;
* every test case it wrote goes through ``afl-showmap -t 5000 -m none -b`` on the AFL twin (the
  command after ``--`` in the instance's ``fuzzer_stats`` ``command_line``, or ``--twin``), one
  process per test case; one whose map adds a bit to the union of all maps so far is copied to
  ``AFL_OUT/NAME/queue/id:NNNNNN,src:PARENT`` (where AFL imports it, as a foreign instance), one
  that crashes afl-showmap to ``crashes/`` and ``queue/``, one that hangs is dropped; an input
  whose SymCC run was killed is copied to ``hangs/``.

Statistics go to ``AFL_OUT/NAME/stats`` as JSON lines (one per analyzed input).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SYMCC_TIMEOUT_S = 90
SHOWMAP_TIMEOUT_MS = 5000
IDLE_S = 5.0


def score(path: Path) -> tuple:
    name = path.name
    try:
        size = path.stat().st_size
    except OSError:
        return (False, False, -(2**63), "")
    return (name.endswith("+cov"), "orig:" in name, -size, name)


def best_unseen(queue: Path, seen: set[str]) -> Path | None:
    try:
        entries = [p for p in queue.iterdir() if p.is_file() and not p.name.startswith(".") and p.name not in seen]
    except FileNotFoundError:
        return None
    return max(entries, key=score, default=None)


def twin_command(instance: Path) -> list[str]:
    """The target command afl-fuzz runs (after ``--``), from the instance's fuzzer_stats."""
    for line in (instance / "fuzzer_stats").read_text().splitlines():
        if line.startswith("command_line"):
            words = line.split(":", 1)[1].split()
            return words[words.index("--") + 1:] if "--" in words else words[-1:]
    raise RuntimeError(f"{instance / 'fuzzer_stats'}: no command_line")


class Helper:
    def __init__(self, out: Path, fuzzer: str, name: str, symcc: list[str], twin: list[str] | None):
        self.queue_in = out / fuzzer / "queue"
        self.home = out / name
        for sub in ("queue", "crashes", "hangs"):
            (self.home / sub).mkdir(parents=True)
        self.symcc = symcc
        self.twin = twin or twin_command(out / fuzzer)
        self.bitmap: bytearray | None = None
        self.seen: set[str] = set()
        self.ids = {"queue": 0, "crashes": 0, "hangs": 0}
        self.stats = open(self.home / "stats", "a")  # noqa: SIM115 - open for the process's life

    def keep(self, data_path: Path, where: str, parent: Path) -> None:
        name = f"id:{self.ids[where]:06d},src:{parent.name[3:9] if parent.name.startswith('id:') else '000000'}"
        shutil.copyfile(data_path, self.home / where / name)
        self.ids[where] += 1

    def run_symcc(self, input_path: Path, work: Path) -> tuple[list[Path], bool, float]:
        cur = self.home / ".cur_input"
        shutil.copyfile(input_path, cur)
        out = work / "output"
        out.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYMCC_")}
        env.update(SYMCC_ENABLE_LINEARIZATION="1", SYMCC_AFL_COVERAGE_MAP=str(self.home / "bitmap"),
                   SYMCC_OUTPUT_DIR=str(out))
        file_mode = "@@" in self.symcc
        if file_mode:
            env["SYMCC_INPUT_FILE"] = str(cur)
        command = ["timeout", "-k", "5", str(SYMCC_TIMEOUT_S), *(str(cur) if a == "@@" else a for a in self.symcc)]
        started = time.monotonic()
        with open(cur, "rb") as stdin:
            proc = subprocess.run(command, stdin=subprocess.DEVNULL if file_mode else stdin, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env, check=False)
        killed = proc.returncode in (124, 137) or proc.returncode < 0
        return sorted(p for p in out.iterdir() if p.is_file()), killed, time.monotonic() - started

    def showmap(self, testcase: Path, work: Path) -> tuple[str, bytes | None]:
        target = [str(testcase) if a == "@@" else a for a in self.twin]
        stdin_mode = "@@" not in self.twin
        map_path = work / "testcase_bitmap"
        command = ["afl-showmap", "-t", str(SHOWMAP_TIMEOUT_MS), "-m", "none", "-b", "-o", str(map_path), "--", *target]
        with open(testcase, "rb") as data:
            proc = subprocess.run(command, stdin=data if stdin_mode else subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, check=False, env={**os.environ, "AFL_QUIET": "1"})
        if proc.returncode == 0:
            return "ok", map_path.read_bytes()
        return ("hang" if proc.returncode == 1 else "crash"), None

    def merge(self, bitmap: bytes) -> bool:
        """Whether ``bitmap`` sets a bit the union of the maps so far lacks (and add it)."""
        if self.bitmap is None:
            self.bitmap = bytearray(bitmap)
            return True
        new = int.from_bytes(bitmap, "little") & ~int.from_bytes(self.bitmap, "little")
        if not new:
            return False
        merged = int.from_bytes(self.bitmap, "little") | int.from_bytes(bitmap, "little")
        self.bitmap[:] = merged.to_bytes(len(self.bitmap), "little")
        return True

    def analyze(self, input_path: Path) -> None:
        work = Path(tempfile.mkdtemp(prefix="helper-", dir=self.home))
        try:
            tests, killed, seconds = self.run_symcc(input_path, work)
            new = crashes = 0
            for test in tests:
                outcome, bitmap = self.showmap(test, work)
                if outcome == "ok" and self.merge(bitmap):
                    self.keep(test, "queue", input_path)
                    new += 1
                elif outcome == "crash":
                    self.keep(test, "crashes", input_path)
                    self.keep(test, "queue", input_path)
                    crashes += 1
            if killed:
                self.keep(input_path, "hangs", input_path)
            self.stats.write(json.dumps({"t": time.time(), "input": input_path.name, "seconds": round(seconds, 4),
                                         "killed": killed, "tests": len(tests), "new": new,
                                         "crashes": crashes}) + "\n")
            self.stats.flush()
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def loop(self) -> None:
        while True:
            best = best_unseen(self.queue_in, self.seen)
            if best is None:
                time.sleep(IDLE_S)
                continue
            self.seen.add(best.name)
            self.analyze(best)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", dest="out", type=Path, required=True, help="the AFL output (sync) directory")
    parser.add_argument("-a", dest="fuzzer", required=True, help="the AFL instance whose queue feeds SymCC")
    parser.add_argument("-n", dest="name", required=True, help="this helper's directory name in the sync directory")
    parser.add_argument("--twin", default=None, help="the AFL twin's command (default: the instance's fuzzer_stats)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no SymCC command after --")
    Helper(args.out, args.fuzzer, args.name, command, args.twin.split() if args.twin else None).loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The README's commands are true as written: every fenced block marked runnable is run.

A block whose info string holds the word ``runnable`` is either ``sh runnable`` (run with
``bash -e``, the venv's ``bin`` first on PATH) or ``python runnable file=NAME`` (its text written
to NAME before the next block runs). All run in order in one empty directory, so a block may use
what an earlier one made; each must exit 0 within its bound.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(.*)$")
BLOCK_TIMEOUT_S = 120  # one block on a loaded 2-core machine; together they take about 40 s here

pytestmark = pytest.mark.mpi  # the blocks launch campaigns


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    info: tuple[str, ...]
    text: str

    @property
    def file(self) -> str | None:
        return next((word[len("file="):] for word in self.info if word.startswith("file=")), None)


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` with its info string's words."""
    blocks, opened, body = [], None, []
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match and opened is None:
            opened, body = (number, tuple(match[1].split())), []
        elif line.startswith("```") and opened is not None:
            blocks.append(Block(opened[0], opened[1], "\n".join(body) + "\n"))
            opened = None
        elif opened is not None:
            body.append(line)
    assert opened is None, f"README.md line {opened[0]}: a fence that is never closed"
    return blocks


def runnable_blocks() -> list[Block]:
    return [b for b in fenced_blocks(README.read_text()) if "runnable" in b.info]


def test_the_runnable_blocks_are_marked_as_the_test_reads_them():
    blocks = runnable_blocks()
    assert len(blocks) >= 6, "the README lost its runnable blocks"
    for block in blocks:
        assert block.info[0] == "sh" or (block.info[0] == "python" and block.file), \
            f"README.md line {block.line}: a runnable block is 'sh runnable' or 'python runnable file=NAME'"
    assert any("--resume" in b.text for b in blocks) and any(b.file for b in blocks)


def test_every_runnable_block_of_the_readme_exits_0(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.monotonic()
    for block in runnable_blocks():
        if block.file:
            (tmp_path / block.file).write_text(block.text)
            continue
        done = subprocess.run(["bash", "-e", "-c", block.text], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=BLOCK_TIMEOUT_S)
        assert done.returncode == 0, (f"README.md line {block.line}: exit {done.returncode}\n{block.text}\n"
                                      f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
    print(f"README blocks: {time.monotonic() - started:.1f} s")

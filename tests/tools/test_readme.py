"""The README's and the docs pages' commands are true as written: every fenced block marked runnable
is run, and every other block of commands names the tests that run them.

A block whose info string holds the word ``runnable`` is either ``sh runnable`` (run with
``bash -e``, the venv's ``bin`` first on PATH) or ``python runnable file=NAME`` (its text written
to NAME before the next block runs). The README's blocks run in order in one empty directory, so
a block may use what an earlier one made; each page of ``docs/`` (but ``notes.md``, the project's
history) runs likewise in an empty directory of its own. Each block must exit 0 within its bound.

A ``sh`` block that cannot run here (it needs SymCC, root or a cluster) is ``sh
tested-by=PATH[::TEST][,PATH...]``: each named test file exists (and defines TEST). A
``symcc-ulfm`` command is shown only in a ``sh`` block. ``docs/README.md`` lists every page and
every relative link of these pages resolves.
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

from symcc_ulfm.cli.args import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README] + sorted(p for p in DOCS.glob("*.md") if p.name != "notes.md")
FENCE = re.compile(r"^```(.*)$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
BLOCK_TIMEOUT_S = 120  # one block on a loaded 2-core machine; the README's together take about 40 s here
README_MAX_LINES = 350


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    info: tuple[str, ...]
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"

    def word(self, key: str) -> str | None:
        return next((word[len(key) + 1:] for word in self.info if word.startswith(f"{key}=")), None)

    @property
    def file(self) -> str | None:
        return self.word("file")


def fenced_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` (a fence at the start of a line) with its info string's words."""
    blocks, opened, body = [], None, []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        match = FENCE.match(line)
        if match and opened is None:
            opened, body = (number, tuple(match[1].split())), []
        elif line.startswith("```") and opened is not None:
            blocks.append(Block(page, opened[0], opened[1], "\n".join(body) + "\n"))
            opened = None
        elif opened is not None:
            body.append(line)
    assert opened is None, f"{page.relative_to(ROOT)} line {opened[0]}: a fence that is never closed"
    return blocks


def runnable_blocks(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if "runnable" in b.info]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_runnable_blocks_are_marked_as_the_test_reads_them():
    blocks = runnable_blocks(README)
    assert len(blocks) >= 6, "the README lost its runnable blocks"
    assert any("--resume" in b.text for b in blocks) and any(b.file for b in blocks)
    for block in (b for page in PAGES for b in runnable_blocks(page)):
        assert block.info[0] == "sh" or (block.info[0] == "python" and block.file), \
            f"{block.where}: a runnable block is 'sh runnable' or 'python runnable file=NAME'"


def test_every_block_of_commands_is_run_here_or_names_the_tests_that_run_it():
    commands = set(build_parser().commands)
    shown = re.compile(rf"^\s*symcc-ulfm ({'|'.join(commands)})\b", re.MULTILINE)
    tested_by = 0
    for block in (b for page in PAGES for b in fenced_blocks(page)):
        if block.info[:1] == ("sh",):
            named = block.word("tested-by")
            assert ("runnable" in block.info) != (named is not None), \
                f"{block.where}: a sh block is either 'sh runnable' or 'sh tested-by=TESTS'"
            for test in (named or "").split(",") if named else []:
                path, _, name = test.partition("::")
                assert path.startswith("tests/") and (ROOT / path).is_file(), f"{block.where}: no test file {path}"
                assert not name or f"def {name}(" in (ROOT / path).read_text(), f"{block.where}: no test {test}"
            tested_by += named is not None
        else:
            assert not shown.search(block.text), f"{block.where}: a symcc-ulfm command outside a sh block"
    assert tested_by >= 4


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= README_MAX_LINES


def test_the_docs_index_lists_every_page():
    index = (DOCS / "README.md").read_text()
    listed = {target for target in LINK.findall(index) if "/" not in target}
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages - listed == set(), f"docs/README.md does not list {sorted(pages - listed)}"
    assert "notes.md" in listed


@pytest.mark.parametrize("page", PAGES + [DOCS / "README.md", ROOT / "benchmarks" / "README.md"], ids=page_id)
def test_every_relative_link_resolves(page):
    outside = re.compile(r"^[a-z]+:")
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    for target in LINK.findall(text):
        if outside.match(target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page_id(page)}: link to {target}, which does not exist"


@pytest.mark.mpi  # the blocks launch campaigns
@pytest.mark.parametrize("page", [p for p in PAGES if runnable_blocks(p)], ids=page_id)
def test_every_runnable_block_exits_0(page, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.monotonic()
    for block in runnable_blocks(page):
        if block.file:
            (tmp_path / block.file).write_text(block.text)
            continue
        done = subprocess.run(["bash", "-e", "-c", block.text], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=BLOCK_TIMEOUT_S)
        assert done.returncode == 0, (f"{block.where}: exit {done.returncode}\n{block.text}\n"
                                      f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
    print(f"{page_id(page)} blocks: {time.monotonic() - started:.1f} s")

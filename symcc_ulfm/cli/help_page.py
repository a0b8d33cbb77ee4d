"""The command-line reference, ``docs/cli.md``, rendered from the parser every command runs
(``args.build_parser``), so that it cannot drift from it:
``python -m symcc_ulfm.cli.help_page > docs/cli.md``. ``tests/tools/test_help_page.py``
checks that the committed page equals a fresh render.

Each command's section is its ``--help`` text at a fixed width, whatever the terminal."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator

from .args import CommandParser, build_parser

WIDTH = 100  # columns of the rendered help, fixed so that the page does not depend on a terminal

HEADER = """\
# Command-line reference

Generated from the parser of `symcc-ulfm` by `python -m symcc_ulfm.cli.help_page > docs/cli.md`;
`tests/tools/test_help_page.py` fails when this page differs from a fresh render, so do not
edit it by hand: change the help texts in `symcc_ulfm/cli/args.py` and render it again.
`symcc-ulfm COMMAND --help` prints the same text.

What `launch` does around these options (the state directory's lock, resume, budgets by count,
the wall-time bound, the `mpiexec` line, signals) is in [campaigns.md](campaigns.md); the exit
codes are listed below the command list and, for every kind of bad input, in
[bad-input.md](bad-input.md). Each executor's options: [concolic-engine.md](concolic-engine.md)
(`concolic`), [symcc-executor.md](symcc-executor.md) (`symcc`), [campaigns.md](campaigns.md)
(`simulate`).
"""


def _commands(parser: CommandParser, depth: int = 2) -> Iterator[tuple[int, CommandParser]]:
    """Every subcommand's parser below ``parser``, depth first, with its heading level."""
    for command in parser.commands.values():
        yield depth, command
        yield from _commands(command, depth + 1)


def _help(parser: CommandParser) -> str:
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    return "\n".join(line.rstrip() for line in parser.format_help().splitlines())


def render() -> str:
    """The whole page: the header, the top-level help, then one section per command."""
    parser = build_parser()
    sections = [HEADER, f"## `{parser.prog}`\n\n```text\n{_help(parser)}\n```\n"]
    sections += [f"{'#' * depth} `{command.prog}`\n\n```text\n{_help(command)}\n```\n"
                 for depth, command in _commands(parser)]
    return "\n".join(sections)


if __name__ == "__main__":
    print(render(), end="")

"""docs/cli.md is the parser's own help, rendered by ``symcc_ulfm.cli.help_page``: the committed page
equals a fresh render, names every command and option, and does not depend on the terminal."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from symcc_ulfm.cli import help_page
from symcc_ulfm.cli.args import build_parser
from symcc_ulfm.cli.help_page import render

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _all_commands(parser):
    for command in parser.commands.values():
        yield command
        yield from _all_commands(command)


def test_the_committed_page_is_a_fresh_render():
    assert CLI_MD.read_text() == render(), \
        "docs/cli.md differs from the parser: run .venv/bin/python -m symcc_ulfm.cli.help_page > docs/cli.md"


def test_the_module_prints_the_page():
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm.cli.help_page"], capture_output=True, text=True,
                          check=True, env={"COLUMNS": "40", "PATH": ""})
    assert done.stdout == render()


def test_every_command_and_option_has_a_section():
    parts = re.split(r"^#{2,} `([^`]+)`$", render(), flags=re.MULTILINE)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    commands = list(_all_commands(build_parser()))
    assert len(commands) >= 17 and {c.prog for c in commands} | {"symcc-ulfm"} == set(sections)
    for command in commands:
        for action in command.arguments:
            for option in action.option_strings:
                assert option in sections[command.prog], f"{command.prog} {option}: missing from its section"


def test_a_changed_help_text_changes_the_page(monkeypatch):
    def changed():
        parser = build_parser()
        parser.commands["oracle"].description = "a text the committed page does not hold"
        return parser

    monkeypatch.setattr(help_page, "build_parser", changed)
    assert "a text the committed page does not hold" in help_page.render() != CLI_MD.read_text()

"""What the README and docs/ quote about the code, checked against the code: patch counts, tested
releases, and every ``accel`` command and option they show (each exists, and has a help text)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from accel_abstraction.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "patches" / "README.md"]
RELEASES = sorted(p.name for p in (REPO / "patches" / "pytorch").iterdir() if (p / "series").is_file())


def _series_length(release: str) -> int:
    lines = (REPO / "patches" / "pytorch" / release / "series").read_text().splitlines()
    return sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))


def test_install_md_counts_the_patches_of_each_series() -> None:
    text = (REPO / "docs" / "install.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| | 2."))
    row = next(line for line in text.splitlines() if line.startswith("| patch series |"))
    releases = [cell.strip().split("+")[0] for cell in header.strip("|").split("|")[1:]]
    counts = [int(re.match(r"\s*(\d+)", cell).group(1)) for cell in row.strip("|").split("|")[1:]]  # type: ignore[union-attr]
    assert releases == RELEASES
    assert counts == [_series_length(r) for r in releases]


def test_the_tested_releases_quoted_are_the_series_and_the_emulators_list() -> None:
    from accel_neuron.emulator.compat import TESTED_TORCH

    assert sorted(TESTED_TORCH) == RELEASES
    quoted = ", ".join(RELEASES[:-1]) + f" and {RELEASES[-1]}"
    assert f"tested: torch {quoted}" in (REPO / "docs" / "install.md").read_text()
    assert f"({', '.join(RELEASES)};" in (REPO / "README.md").read_text()  # the table row on patches
    assert f"tested torch releases ({', '.join(RELEASES)})" in (REPO / "README.md").read_text()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for name, sub in _subparsers(parser).items():
        yield from _walk(sub, (*path, name))


PARSER = build_parser()
COMMANDS = dict(_walk(PARSER))


def _help_of(parser: argparse.ArgumentParser, name: str) -> str | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help
    return None


@pytest.mark.parametrize("path", [p for p in COMMANDS if p], ids=" ".join)
def test_every_command_and_option_has_a_help_text(path: tuple[str, ...]) -> None:
    parser = COMMANDS[path]
    parent = COMMANDS[path[:-1]]
    assert _help_of(parent, path[-1]), f"accel {' '.join(path)} has no help text"
    for action in parser._actions:
        if action.option_strings and action.help in (None, ""):
            pytest.fail(f"accel {' '.join(path)} {'/'.join(action.option_strings)} has no help text")


def test_port_check_says_what_port_check_does() -> None:
    def check_help(command: str) -> str:
        return next(a.help for a in COMMANDS[(command,)]._actions if "--check" in a.option_strings)

    assert check_help("port") != check_help("scan")
    assert "rewritten" in check_help("port")


def _options_of(command: str) -> set[str]:
    """Every option string of ``accel COMMAND`` and of its actions, plus the global ones."""
    found = {"--help", "-h", "--traceback", "--version"}
    for path, parser in COMMANDS.items():
        if path[:1] == (command,):
            found.update(s for a in parser._actions for s in a.option_strings)
    return found


#: Commands (and actions) whose first positional is a program: what follows it is the program's own.
_TAKES_A_PROGRAM = {("run",), ("parity",), ("patches", "run")}
_PROGRAM = re.compile(r"(\.py|SCRIPT|PROGRAM|torchrun|python)$")


def _quoted_commands() -> Iterator[tuple[str, int, str, list[str]]]:
    """``(file, line, command, options)`` for each ``accel CMD ...`` the docs quote (inline code, console lines)."""
    pattern = re.compile(r"(?:^\$ |`)accel ([a-z][a-z-]*)([^`\n#]*)")
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), start=1):
            for match in pattern.finditer(line.strip()):
                command, rest = match.group(1), match.group(2)
                tokens = rest.split()
                takes_program = (command,) in _TAKES_A_PROGRAM or (command, *tokens[:1]) in _TAKES_A_PROGRAM
                options: list[str] = []
                for i, token in enumerate(tokens):
                    if token == "--" or token in ("|", "&&", ">", "2>&1"):
                        break
                    if takes_program and (_PROGRAM.search(token) or (token == "-m" and i + 1 < len(tokens))):
                        break
                    if token.startswith("-") and len(token) > 1:
                        options.append(re.split(r"[=\[\]`),.;:]", token)[0] if token.startswith("--") else token[:2])
                yield doc.relative_to(REPO).as_posix(), number, command, options


def test_every_accel_command_and_option_the_docs_quote_exists() -> None:
    commands = set(_subparsers(PARSER))
    wrong = []
    quoted = list(_quoted_commands())
    for doc, number, command, options in quoted:
        if command not in commands:
            wrong.append(f"{doc}:{number}: accel {command}: no such command")
            continue
        known = _options_of(command)
        wrong += [f"{doc}:{number}: accel {command} {o}: no such option" for o in options if o not in known]
    assert len(quoted) > 50  # the docs quote the CLI a lot: the pattern must keep finding it
    assert not wrong, "\n".join(wrong)

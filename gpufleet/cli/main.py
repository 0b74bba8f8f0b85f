# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``gpufleet`` console script: the dispatcher of its subcommands.

``gpufleet parse KIND FILE`` prints what gpufleet reads from a pasted tool output as JSON,
so a user can check it before trusting a verdict built on it (``--query EXPR``: only what that
JMESPath expression selects). Unparseable input, or a query that is not JMESPath, exits 1
with a one-line error naming the line or the expression.

The others live in ``gpufleet/cli/``, one module each: ``validate`` (the acceptance playbook on
ansible-runner, with ``--retest-failed``), ``report`` (render a results directory again),
``bundle`` (the dispute bundle) and ``demo`` (the replayed simulated fleet of the checkout).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Sequence
from typing import Any

from gpufleet import collection
from gpufleet.cli import bundle
from gpufleet.cli import demo
from gpufleet.cli import estimate
from gpufleet.cli import report
from gpufleet.cli import validate
from gpufleet.cli.common import add_output_arguments, json_output, print_json
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import KINDS, parse
from gpufleet.results.store import collection_version
from gpufleet.text import one_line

EXIT_PARSE_ERROR = 1
EXIT_USAGE = 2


def _read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, "r", encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _cmd_parse(args: argparse.Namespace) -> int:
    output = json_output(args, "parse")
    if output is None:
        return EXIT_PARSE_ERROR
    try:
        text = _read_input(args.file)
    except OSError as exc:
        sys.stderr.write("gpufleet parse: cannot read %s: %s\n" % (one_line(args.file), one_line(exc.strerror or exc)))
        return EXIT_USAGE
    binary = text.find("\x00")
    if binary >= 0:
        # no tool this parses prints NUL: a binary file, which some parsers would read as an empty, clean output
        sys.stderr.write("gpufleet parse: %s: binary data (a NUL byte at character %d), not the text output of a tool "
                         "(%s): nothing parsed\n" % (one_line(args.file), binary, args.kind))
        return EXIT_PARSE_ERROR
    try:
        result = parse(args.kind, text)
    except ParseError as exc:
        # the message quotes the offending line: node text, shown with its control characters escaped
        sys.stderr.write("gpufleet parse: %s: %s\n" % (one_line(args.file), one_line(exc)))
        return EXIT_PARSE_ERROR
    return print_json(output, result, "parse", compact=args.compact)


def version_text() -> str:
    """What ``--version`` prints: the library, the collection it runs (and where) and ansible-core."""
    try:
        library = importlib.metadata.version("gpufleet")
    except importlib.metadata.PackageNotFoundError:
        library = "not installed (run from a source checkout)"
    try:
        core = importlib.metadata.version("ansible-core")
    except importlib.metadata.PackageNotFoundError:
        core = "not installed"
    return "gpufleet %s\ncollection gpufleet.acceptance %s at %s\nansible-core %s" % (
        library, collection_version() or "unknown", collection.collection_root(), core)


class _Version(argparse.Action):
    """``--version``: :func:`version_text` as it is, one line per part (argparse's own action rewraps it)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The ``gpufleet`` parser: ``parse`` here, the other subcommands from their modules."""
    parser = argparse.ArgumentParser(prog="gpufleet", description="Measured acceptance of rented GPU servers.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the versions of gpufleet, its collection and ansible-core, and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    kinds_help = "; ".join("%s = %s" % (kind, what) for kind, (_m, _f, what) in sorted(KINDS.items()))
    parse_cmd = commands.add_parser(
        "parse",
        help="parse a tool's output and print it as JSON",
        description="Parse a tool's output (a file, or - for standard input) and print the result as JSON. KINDS: " + kinds_help,
    )
    parse_cmd.add_argument("kind", choices=sorted(KINDS), metavar="KIND", help="the format of FILE (see above)")
    parse_cmd.add_argument("file", metavar="FILE", help="the tool's output; - reads standard input")
    parse_cmd.add_argument("--compact", action="store_true", help="print JSON on one line")
    add_output_arguments(parse_cmd, "\"mappings[?state=='Up'].netdev\" (ibdev2netdev)", table=False)
    parse_cmd.set_defaults(func=_cmd_parse)
    for module in (validate, report, bundle, demo, estimate):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand ``argv`` names (default: the command line); its exit code."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

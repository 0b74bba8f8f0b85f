# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet report RESULTS_DIR [--out DIR] [--output json] [--query EXPR]``: render a run's report
again from its results directory, without contacting any node, and print its summary table (or, with
``--output json``, the run in full, every host record as hosts/<host>.json holds it; ``--query``: only what that
JMESPath expression selects; both only read the directory, never render or write into it). Exit 0 when done, 64
(gpufleet/results/exit_codes.py) when the directory is not a gpufleet results directory, 1 when the run did not
finish, ``--out`` is a symbolic link or a directory of other files (without ``--force``), the report could not be
rendered or the query cannot be used.

``gpufleet report SLICE1 SLICE2 ... --out MERGED``: the results directories of a sliced run (AWX job slicing) merged
into MERGED (results/merge.py: each node keeps its slice's verdict), then its report rendered as above."""

from __future__ import annotations

import argparse
import os
import sys

from gpufleet.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    Subcommands,
    add_output_arguments,
    fleet_line,
    json_output,
    load_run,
    next_step_lines,
    node_verdicts,
    print_json,
    render_report,
    run_json,
    say,
    summary_table,
    terminal_text,
)
from gpufleet.cli.playbook_options import OptionsError, add_reference_job_argument, reference_job_option
from gpufleet.results.compact import DOCUMENT_SCHEMA
from gpufleet.results.exit_codes import EXIT_INPUT
from gpufleet.results.merge import merge_slices
from gpufleet.results.store import RUN_FILE, SCHEMA, ResultsError, foreign_contents, read_json

# What the renderer writes: a directory holding its results.json holds an earlier report, which it may replace.
RESULTS_DOCUMENT = "results.json"


def out_problem(out_dir: str, force: bool) -> str | None:
    """Why ``--out`` is refused (as ``gpufleet validate --out``): a symbolic link, or a directory that is neither a
    gpufleet results directory nor one of an earlier report (its results.json); None when it may be written."""
    found = foreign_contents(out_dir)
    if found is None or force:
        return None
    if os.path.islink(out_dir):
        return "--out %s is %s; choose an empty or new directory, or --force to write into it anyway" % (out_dir, found)
    try:
        document = read_json(os.path.join(out_dir, RESULTS_DOCUMENT))
    except ResultsError:
        document = None
    # v1: a report of a gpufleet before results.json v2
    if isinstance(document, dict) and document.get("schema") in (DOCUMENT_SCHEMA, SCHEMA):
        return None
    return ("--out %s holds neither a gpufleet run nor an earlier report: it is %s; choose an empty or new directory, "
            "or --force to write into it anyway" % (out_dir, found))


def merged_dir(args: argparse.Namespace) -> tuple[str | None, int]:
    """The one results directory to report: the only one given, or the slices merged into ``--out``."""
    if len(args.results_dir) == 1:
        return os.path.abspath(args.results_dir[0]), EXIT_OK
    if not args.out:
        say("gpufleet report: %d results directories are slices to merge: name the merged one with --out DIR"
            % len(args.results_dir))
        return None, EXIT_INPUT
    out_dir = os.path.abspath(args.out)
    problem = out_problem(out_dir, args.force)
    if problem:
        say("gpufleet report: %s" % terminal_text(problem))
        return None, EXIT_FAILED
    try:
        merge_slices([os.path.abspath(path) for path in args.results_dir], out_dir)
    except (ResultsError, OSError) as exc:
        say("gpufleet report: merging the slices: %s" % terminal_text(exc))
        return None, EXIT_INPUT
    say("gpufleet report: %d slices merged into %s (each node keeps its slice's verdict)" % (
        len(args.results_dir), out_dir))
    return out_dir, EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    output = json_output(args, "report")
    if output is None:
        return EXIT_FAILED
    results_dir, code = merged_dir(args)
    if results_dir is None:
        return code
    if not os.path.isfile(os.path.join(results_dir, RUN_FILE)):
        say("gpufleet report: %s is not a gpufleet results directory (it has no %s): give the --out directory of a "
            "gpufleet validate run" % (terminal_text(results_dir), RUN_FILE))
        return EXIT_INPUT
    try:
        run, fleet, hosts = load_run(results_dir)
    except ResultsError as exc:
        say("gpufleet report: %s" % exc)
        return EXIT_FAILED
    if fleet is None:
        say("gpufleet report: %s has no fleet.json: the run did not finish (resume it with gpufleet validate --out %s)" % (results_dir, results_dir))
        return EXIT_FAILED
    out_dir = os.path.abspath(args.out) if args.out else results_dir
    problem = out_problem(out_dir, args.force) if args.out else None
    if problem:
        say("gpufleet report: %s" % terminal_text(problem))
        return EXIT_FAILED
    try:
        job = reference_job_option(getattr(args, "reference_job", None))
    except OptionsError as exc:
        say("gpufleet report: %s" % exc)
        return EXIT_FAILED
    verdicts = node_verdicts(run, fleet, hosts)
    if output.wanted:
        # a query reads the run; it never writes into the evidence directory
        if print_json(output, run_json(run, fleet, hosts), "report") != EXIT_OK:
            return EXIT_FAILED
        say(fleet_line(verdicts, fleet))  # stdout holds the JSON alone, for a pipe
        return EXIT_OK
    report, why = render_report(results_dir, out_dir, reference_job=job)
    lines = [fleet_line(verdicts, fleet), *next_step_lines(verdicts, hosts, results_dir)]
    sys.stdout.write(summary_table(verdicts, hosts) + "\n\n" + "".join(line + "\n" for line in lines))
    if not report:
        say("gpufleet report: %s" % why)
        return EXIT_FAILED
    sys.stdout.write("report: %s\n" % report)
    return EXIT_OK


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    """``gpufleet report``."""
    parser = commands.add_parser(
        "report",
        help="render the report of an earlier run again, without re-running it",
        description="Render report.html, report.md, results.json and junit.xml from a results directory "
                    "(nothing is run), then print the summary table; or print the run as JSON (--output json, "
                    "--query), which reads the directory and writes nothing. Exit 0 when done, 64 when the directory "
                    "is not a gpufleet results directory, 1 when the run did not finish, rendering failed or the "
                    "query cannot be used.",
    )
    parser.add_argument("results_dir", metavar="RESULTS_DIR", nargs="+",
                        help="the run's results directory; several: the slices of one sliced run (AWX job slicing), "
                             "merged into --out first (each node keeps its slice's verdict)")
    parser.add_argument("--out", metavar="DIR",
                        help="write the report here (default: RESULTS_DIR); a symbolic link, or a directory that holds "
                             "neither a gpufleet run nor an earlier report, is refused without --force")
    parser.add_argument("--force", action="store_true", help="write into --out whatever it holds")
    add_reference_job_argument(parser)
    add_output_arguments(parser, "\"values(hosts)[?verdict=='REJECT'].host\" (the rejected nodes)")
    parser.set_defaults(func=cmd_report)
    return parser

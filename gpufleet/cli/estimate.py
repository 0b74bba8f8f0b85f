# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet estimate``: how fast a model trains on an offer and what it costs (gpufleet/report/estimate.py)."""

from __future__ import annotations

import argparse
import json
import sys

from gpufleet.cli.common import EXIT_FAILED, Subcommands, add_output_arguments, json_output, print_json, say
from gpufleet.parsers.common import ParseError, refuse_deep_json
from gpufleet.plan.training import EstimateError
from gpufleet.report.estimate import answer
from gpufleet.text import one_line


def cmd_estimate(args: argparse.Namespace) -> int:
    output = json_output(args, "estimate")
    if output is None:
        return EXIT_FAILED
    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, "r", encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        say("gpufleet estimate: cannot read %s: %s" % (one_line(args.file), one_line(exc.strerror or exc)))
        return EXIT_FAILED
    try:
        refuse_deep_json(text)  # before json.loads, which recurses: a RecursionError otherwise
        document = json.loads(text)
    except ParseError as exc:
        say("gpufleet estimate: %s: %s" % (one_line(args.file), one_line(exc.message)))
        return EXIT_FAILED
    except ValueError as exc:
        say("gpufleet estimate: %s is not JSON: %s" % (one_line(args.file), one_line(exc)))
        return EXIT_FAILED
    try:
        result = answer(document)
    except EstimateError as exc:
        say("gpufleet estimate: %s: %s" % (one_line(args.file), one_line(exc)))
        return EXIT_FAILED
    return print_json(output, result, "estimate")


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    """``gpufleet estimate``."""
    parser = commands.add_parser(
        "estimate",
        help="estimate the training time and cost of a model on an offer",
        description="Read one JSON document (job, offer, optional parallelism; docs/cli.md) from FILE or - (standard "
                    "input) and print the fastest parallel layout that fits, its step time, throughput, MFU, days, "
                    "GPU-hours and cost, with every input marked measured, claimed or assumed. Exit 0 when estimated "
                    "(a job that does not fit included: feasible false), 1 when the document cannot be used.",
    )
    parser.add_argument("file", metavar="FILE", help="the estimate document; - reads standard input")
    add_output_arguments(parser, "\"step_time_s\"", table=False)
    parser.set_defaults(func=cmd_estimate)
    return parser

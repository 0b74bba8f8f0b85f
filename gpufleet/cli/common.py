# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``gpufleet`` subcommands share: where the collection is, reading a results directory,
the summary table, text from nodes made safe for a terminal, the report renderer, and JSON output
with ``--query`` (a JMESPath expression, as in the AWS and Azure CLIs)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any, cast

import jmespath
from jmespath import exceptions as jmespath_errors

from gpufleet.checks.model import ACCEPTED
from gpufleet.checks.verdict import fleet_words
from gpufleet.report.next_steps import next_step
from gpufleet.results.exit_codes import EXIT_FAILED, EXIT_OK
from gpufleet.results.shapes import FleetDocument, HostRecord, RunDocument, RunRecord
from gpufleet.results.store import FLEET_FILE, ResultsError, RunDir, read_json, utc_now
from gpufleet.text import one_line

# Exit codes of validate / demo / report / bundle: the one table of both entry points (gpufleet/results/exit_codes.py).

FAILING = ("REJECT", "UNREACHABLE", "INCOMPLETE")
# Failing nodes first in every listing: what a reader must act on.
VERDICT_ORDER = {"REJECT": 0, "UNREACHABLE": 1, "INCOMPLETE": 2, None: 3, "ACCEPT WITH WARNINGS": 4, "ACCEPT": 5}

# The report renderer (gpufleet/report/render.py); where it is missing or broken, `validate`
# still prints its summary and says that no report was rendered.
RENDER_MODULE = "gpufleet.report.render"

# The subcommands of the gpufleet parser (what argparse's add_subparsers() returns): each command module's
# add_parser() adds its own
Subcommands = argparse._SubParsersAction  # pylint: disable=protected-access

# {host: verdict, None when never judged}
Verdicts = Mapping[str, str | None]
# {host: its record}
Records = Mapping[str, Mapping[str, Any]]


def say(text: str) -> None:
    """One line of progress or diagnosis on stderr (never mixed into the summary on stdout)."""
    sys.stderr.write(text.rstrip("\n") + "\n")
    sys.stderr.flush()


def terminal_text(value: object, limit: int | None = None) -> str:
    """``value`` as one line a terminal shows as text: control and bidi characters (a node's hostname,
    a tool's message) become ``\\xNN`` escapes, whitespace runs one space, cut at ``limit`` (gpufleet/text.py,
    the one rule every output of node text follows)."""
    return one_line(value, limit)


def load_run(results_dir: str) -> tuple[RunRecord, FleetDocument | None, dict[str, HostRecord]]:
    """``(run, fleet, hosts)`` of a results directory: run.json, fleet.json (None when the run never
    finished) and every host record by name. ResultsError when it is not a schema v1 results directory."""
    run_dir = RunDir.open(results_dir)
    run = run_dir.read_run()
    fleet_path = os.path.join(run_dir.path, FLEET_FILE)
    fleet = read_json(fleet_path) if os.path.exists(fleet_path) else None
    if fleet is not None and (not isinstance(fleet, dict) or fleet.get("schema") != run.get("schema")):
        raise ResultsError("%s: not a %s fleet verdict" % (fleet_path, run.get("schema")))
    return run, cast("FleetDocument | None", fleet), run_dir.host_records()


def node_verdicts(run: Mapping[str, Any], fleet: Mapping[str, Any] | None, hosts: Records) -> dict[str, str | None]:
    """Every node of the run with its verdict: ``{host: verdict or None}`` (None: never judged).

    fleet.json is the authority when the run finished; else the host records, and the run's host
    list for nodes with no record at all.
    """
    verdicts: dict[str, str | None] = {}
    for host in run.get("hosts") or []:
        verdicts[str(host)] = None
    for host, record in hosts.items():
        verdicts[host] = record.get("verdict") or ("UNREACHABLE" if record.get("unreachable") else None)
    if fleet:
        for host, entry in (fleet.get("node_verdicts") or {}).items():
            verdicts[host] = (entry or {}).get("verdict")
    return verdicts


def failing_checks(record: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The checks that decide a node's rejection (status ``fail``), in report order."""
    return [item for item in (record or {}).get("checks") or [] if isinstance(item, dict) and item.get("status") == "fail"]


def reasons(record: Mapping[str, Any] | None, verdict: str | None, count: int = 2) -> list[Any]:
    """The first ``count`` reasons for ``verdict`` in words: the failing checks of a REJECT, the warnings
    of an ACCEPT WITH WARNINGS, the unverified required items of an INCOMPLETE node, the connection error of
    an UNREACHABLE node."""
    record = record or {}
    if verdict == "UNREACHABLE":
        return [record.get("unreachable") or "unreachable"]
    if verdict is None:
        return ["not judged (the run did not finish)"]
    if verdict == "INCOMPLETE":
        unverified = ["not verified: %s" % reason
                      for reason in ((record.get("coverage") or {}).get("incomplete") or [])]
        unverified = unverified or ["required evidence not verified (see the report)"]
        more = len(unverified) - count
        return unverified[:count] + (["and %d more" % more] if more > 0 else [])
    wanted = ("fail",) if verdict == "REJECT" else ("warn", "error")
    found = [item.get("message") or item.get("id") for item in record.get("checks") or [] if isinstance(item, dict) and item.get("status") in wanted]
    more = len(found) - count
    return found[:count] + (["and %d more" % more] if more > 0 else [])


def sort_nodes(verdicts: Verdicts) -> list[str]:
    """Host names, failing nodes first, then by name."""
    return sorted(verdicts, key=lambda host: (VERDICT_ORDER.get(verdicts[host], 3), host))


def verdict_cell(verdict: str | None, record: Mapping[str, Any] | None) -> str:
    """A node's verdict as the report shows it: an accepted node judged on its facts alone says so (its coverage's
    label, ``static checks only`` at level quick)."""
    label = ((record or {}).get("coverage") or {}).get("label") if verdict in ACCEPTED else None
    return "%s (%s)" % (verdict, terminal_text(str(label), 40)) if label else (verdict or "NOT JUDGED")


def summary_table(verdicts: Verdicts, hosts: Records, width: int = 160) -> str:
    """The summary table: one line per node (node, verdict, first reasons), failing nodes first."""
    rows = [(terminal_text(host, 60), verdict_cell(verdicts[host], hosts.get(host)),
             "; ".join(terminal_text(reason, 200) for reason in reasons(hosts.get(host), verdicts[host])))
            for host in sort_nodes(verdicts)]
    node_w = max([len("NODE")] + [len(row[0]) for row in rows])
    verdict_w = max([len("VERDICT")] + [len(row[1]) for row in rows])
    why_w = max(width - node_w - verdict_w - 4, 20)
    lines = ["%-*s  %-*s  %s" % (node_w, "NODE", verdict_w, "VERDICT", "FIRST REASONS")]
    for node, verdict, why in rows:
        lines.append(("%-*s  %-*s  %s" % (node_w, node, verdict_w, verdict, terminal_text(why, why_w))).rstrip())
    return "\n".join(lines)


def fleet_line(verdicts: Verdicts, fleet: Mapping[str, Any] | None = None) -> str:
    """``fleet REJECT: 1 of 3 nodes acceptable; 1 ACCEPT, 2 REJECT`` from the node verdicts (how many can be used
    first: the fleet's verdict is its worst node's); ``fleet ACCEPT (static checks only): 3 of 3 nodes acceptable; 3
    ACCEPT`` when ``fleet`` (fleet.json) carries its level's label and the fleet is accepted."""
    counts: dict[str, int] = {}
    for verdict in verdicts.values():
        counts[verdict or "NOT JUDGED"] = counts.get(verdict or "NOT JUDGED", 0) + 1
    if any(verdict is None for verdict in verdicts.values()) or not verdicts:
        verdict_text = "NOT JUDGED"
    elif counts.get("REJECT"):
        verdict_text = "REJECT"
    elif counts.get("UNREACHABLE"):
        verdict_text = "UNREACHABLE"
    elif counts.get("INCOMPLETE"):
        verdict_text = "INCOMPLETE"
    elif counts.get("ACCEPT WITH WARNINGS"):
        verdict_text = "ACCEPT WITH WARNINGS"
    else:
        verdict_text = "ACCEPT"
    order = ["ACCEPT", "ACCEPT WITH WARNINGS", "INCOMPLETE", "REJECT", "UNREACHABLE", "NOT JUDGED"]
    # the label qualifies an ACCEPT only: nodes judged again since fleet.json was written may have made it a REJECT
    label = (fleet or {}).get("label") if verdict_text in ACCEPTED else None
    return fleet_words(verdict_text, {name: counts.get(name, 0) for name in order},
                       terminal_text(str(label), 80) if label else None)


# At most this many nodes get their next step in the summary; the report names each node's.
NEXT_STEPS_SHOWN = 10


def next_step_lines(verdicts: Verdicts, hosts: Records, results_dir: str) -> list[str]:
    """``next: <node>: <what to do>`` for each node not accepted, failing nodes first (gpufleet/report/next_steps.py),
    at most NEXT_STEPS_SHOWN of them, then how many more the report names."""
    lines = []
    waiting = [host for host in sort_nodes(verdicts) if verdicts[host] not in ACCEPTED]
    for host in waiting[:NEXT_STEPS_SHOWN]:
        coverage = (hosts.get(host) or {}).get("coverage") or {}
        step = next_step(verdicts[host], host, results_dir, coverage.get("incomplete") or [])
        lines.append("next: %s: %s" % (terminal_text(host, 80), step))
    if len(waiting) > NEXT_STEPS_SHOWN:
        lines.append("next: and %d more node(s) not accepted: the report names the next step of each"
                     % (len(waiting) - NEXT_STEPS_SHOWN))
    return lines


def renderer() -> tuple[Callable[..., Any] | None, type[Exception] | None, str | None]:
    """``(render_report, error class, None)`` of the report renderer, or ``(None, None, why)`` while it is not installed."""
    try:
        # imported when a report is rendered: the renderer's templates cost the other commands nothing
        from gpufleet.report import render as module  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        return None, None, "the report renderer is not available (%s)" % exc
    function = getattr(module, "render_report", None)
    if not callable(function):
        return None, None, "the report renderer %s has no render_report()" % RENDER_MODULE
    return function, getattr(module, "ReportError", ResultsError), None


def render_report(results_dir: str, out_dir: str | None = None,
                  reference_job: dict[str, Any] | None = None) -> tuple[str | None, str | None]:
    """Render ``results_dir`` into ``out_dir`` (default: the results directory itself) with the
    report renderer (report/render.py ``render_report``).

    Returns ``(report_path, None)`` or ``(None, why)``: the renderer is missing or failed. The
    report is the HTML file when the renderer wrote one, else the directory it wrote into.
    """
    function, error, why = renderer()
    out_dir = os.path.abspath(out_dir or results_dir)
    if function is None:
        return None, why
    try:
        options = {"reference_job": reference_job} if reference_job is not None else {}
        produced = function(os.path.abspath(results_dir), out_dir, **options)
    except (error or ResultsError, ResultsError, OSError, ValueError) as exc:
        return None, "rendering the report failed: %s" % exc
    html = ((produced or {}).get("files") or {}).get("html") if isinstance(produced, dict) else None
    return os.path.abspath(html) if html else out_dir, None


# -- JSON output and --query -----------------------------------------------------------------

OUTPUT_TABLE = "table"
OUTPUT_JSON = "json"


class QueryError(Exception):
    """A ``--query`` that cannot be used: not JMESPath, or failing on the document (an unknown function,
    a wrong argument type). One line that names the expression."""


def _query_problem(exc: jmespath_errors.JMESPathError) -> str:
    """What is wrong with an expression, on one line (jmespath's own text spans three, with a caret)."""
    if isinstance(exc, jmespath_errors.IncompleteExpressionError):
        return "incomplete expression"
    if isinstance(exc, jmespath_errors.LexerError):
        return "%s at column %d" % (exc.message, exc.lexer_position)
    if isinstance(exc, jmespath_errors.ParseError) and not isinstance(exc, jmespath_errors.ArityError):
        return "%s at column %d (token %r)" % (exc.msg, exc.lex_position, exc.token_value)
    return " ".join(str(exc).split())


class JsonOutput:
    """What ``--output`` and ``--query`` ask of a command: JSON on stdout (``--output json``, or any
    ``--query``) instead of its table, reduced to what the JMESPath expression selects.

    Built before the command does any work, so that a bad expression costs nothing (``validate``
    would otherwise run the whole playbook first): QueryError then.
    """

    def __init__(self, output: str | None = None, query: str | None = None) -> None:
        if query is not None and output == OUTPUT_TABLE:
            raise QueryError("--query %s selects from JSON: it needs --output json, not --output table"
                             % _quoted(query))
        self.query = query
        self.wanted = output == OUTPUT_JSON or query is not None
        self._compiled = None
        if query is not None:
            try:
                self._compiled = jmespath.compile(query)
            except jmespath_errors.JMESPathError as exc:
                raise QueryError("--query %s is not a valid JMESPath expression: %s"
                                 % (_quoted(query), _query_problem(exc))) from None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "JsonOutput":
        return cls(getattr(args, "output", None), getattr(args, "query", None))

    def select(self, document: Any) -> Any:
        """What the expression selects from ``document`` (the whole document without ``--query``)."""
        if self._compiled is None:
            return document
        try:
            return self._compiled.search(document)
        except jmespath_errors.JMESPathError as exc:
            raise QueryError("--query %s failed: %s" % (_quoted(str(self.query)), _query_problem(exc))) from None

    def write(self, document: Any, compact: bool = False, stream: IO[str] | None = None) -> None:
        """Print what the expression selects from ``document`` as JSON (QueryError when the search fails)."""
        selected = self.select(document)
        stream = stream or sys.stdout
        # default=str: the results.json renderer's own rule for a value JSON has no type for
        json.dump(selected, stream, indent=None if compact else 2, sort_keys=False, default=str)
        stream.write("\n")


def _quoted(expression: str) -> str:
    return "'%s'" % terminal_text(expression)


def add_output_arguments(parser: argparse.ArgumentParser, example: str, table: bool = True) -> None:
    """``--query EXPR`` (``example``: an expression for this command's JSON, for the help), and
    ``--output table|json`` for a command whose stdout is a table."""
    if table:
        parser.add_argument("--output", choices=(OUTPUT_TABLE, OUTPUT_JSON),
                            help="table (the default) or json: the run in full, every host record with its facts "
                                 "(--query implies json)")
    parser.add_argument("--query", metavar="EXPR",
                        help="print only what this JMESPath expression (jmespath.org) selects from the JSON, "
                             "e.g. " + example)


def run_json(run: RunRecord, fleet: FleetDocument | None, hosts: Mapping[str, HostRecord]) -> RunDocument:
    """The run in full as one document (schema gpufleet.results/v1, gpufleet/results/shapes.py RunDocument): schema,
    generated, run, fleet and the host records by name as hosts/<host>.json holds them, facts and raw index included
    (results.json, v2, leaves those to the records)."""
    # imported here: the report model pulls in the fact modules, which `gpufleet parse` has no use for
    from gpufleet.report.model import run_document  # pylint: disable=import-outside-toplevel
    return cast(RunDocument, run_document({"run": run, "fleet": fleet, "hosts": hosts}, generated=utc_now()))


def json_output(args: argparse.Namespace, command: str) -> JsonOutput | None:
    """The ``--output``/``--query`` of ``args``, or None after saying on stderr why the query cannot be used."""
    try:
        return JsonOutput.from_args(args)
    except QueryError as exc:
        say("gpufleet %s: %s" % (command, exc))
        return None


def print_json(output: JsonOutput, document: Any, command: str, compact: bool = False) -> int:
    """Print ``document`` (what ``--query`` selects from it) as JSON: EXIT_OK, or EXIT_FAILED after
    saying on stderr, in one line naming the expression, why the query failed on it."""
    try:
        output.write(document, compact=compact)
    except QueryError as exc:
        say("gpufleet %s: %s" % (command, exc))
        return EXIT_FAILED
    return EXIT_OK

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a run's results directory into report.html, report.md, results.json and junit.xml.

Controller side, re-renderable at any time from the directory alone (nothing is run)::

    render_report("results/20260131T120000Z")   # writes the four files into that directory

- ``report.html``: one self-contained file (inline CSS and SVG, no script, no external asset),
  from ``gpufleet/report/templates/report.html.j2`` in a Jinja2 environment that autoescapes
  HTML (every node string is escaped once; the templates never mark one safe); past NODES_PER_PAGE nodes it holds
  the per-node tables of the first of them, and ``report-nodes-002.html``, ... (``report_nodes.html.j2``, each
  self-contained) those of the rest, NODES_PER_PAGE a page;
- ``report.md``: the summary in Markdown (``report.md.j2``); every value printed is passed
  through :func:`md_escape` by the environment's ``finalize``, so Markdown and HTML
  metacharacters from a node are shown, never interpreted;
- in both, control and bidi characters from a node (terminal escape sequences, U+202E, NUL) are
  shown as ``\\x1b``-style escapes (gpufleet/text.py), never passed on raw nor dropped;
- ``results.json``: the run as one document (schema ``gpufleet.results/v2``: run, fleet, the hosts without their
  readings, each value of a check once: gpufleet/results/compact.py);
- ``junit.xml``: one testcase per node x check (``classname`` = node), fail -> ``<failure>``,
  skip -> ``<skipped>``, error -> ``<error>``; an unreachable node is one failed testcase; each
  required item not verified is an ``evidence.<item>`` testcase ``<skipped>`` with its reason, and an
  INCOMPLETE node one failed ``node.evidence`` testcase.

Every file is written atomically (gpufleet.results.store.write_bytes_atomic).
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Sequence

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from gpufleet.checks.model import ACCEPTED
from gpufleet.report.cost import ReferenceJobError, validate_job
from gpufleet.report.model import (ReportError, build_model, error_words, load_profile_thresholds, load_results,
                                   results_document)
from gpufleet.results.store import utc_now, write_bytes_atomic, write_text_atomic
from gpufleet.text import visible

TEMPLATES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
FORMATS = ("html", "md", "json", "junit")
FILE_NAMES = {"html": "report.html", "md": "report.md", "json": "results.json", "junit": "junit.xml"}

# Markdown: backslash-escape what Markdown interprets; HTML metacharacters become entities.
_MD_BACKSLASH = re.compile(r"([\\`*_\[\]|~#])")
_MD_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# Characters XML 1.0 cannot carry at all (a node's output may hold any byte).
_XML_INVALID = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def md_escape(value: Any) -> str:
    """``value`` as Markdown text that shows exactly as given: ``<b>`` -> ``&lt;b&gt;``, ``*`` -> ``\\*``, newlines ->
    spaces, control and bidi characters (``ESC``, ``U+202E``, NUL) -> ``\\x1b``, ``\\u202e``, ``\\x00``
    (gpufleet/text.py)."""
    if value is None:
        return ""
    text = str(value)
    text = text.translate(_MD_ENTITIES)
    text = _MD_BACKSLASH.sub(r"\\\1", text)
    text = " ".join(text.split("\n")).replace("\r", " ")
    # last: the \xNN escapes of control and bidi characters must reach the file as typed, not backslash-escaped again
    return visible(text, keep_lines=True)


def xml_text(value: Any) -> str:
    """Text for junit.xml, shown as report.md and report.html show it: control, separator and bidi characters from a
    node (ESC, NUL, U+202E) become ``\\x1b``, ``\\x00``, ``\\u202e`` (gpufleet/text.py ``visible``; newlines and tabs
    kept), and so does what else XML 1.0 cannot carry (a lone surrogate, U+FFFE); ElementTree escapes the rest."""
    return _XML_INVALID.sub(_xml_escape, visible(value, keep_lines=True))


def _xml_escape(match: re.Match[str]) -> str:
    """A character XML 1.0 cannot carry as ``\\xNN`` (below 256) or ``\\uNNNN``."""
    code = ord(match.group(0))
    return "\\x%02x" % code if code < 256 else "\\u%04x" % code


def html_visible(value: Any) -> Any:
    """The HTML environment's ``finalize``: control and bidi characters of a printed string shown as ``\\xNN``
    (gpufleet/text.py), newlines and tabs kept. Already-escaped text (``|e``) is treated alike: the escapes
    hold no HTML metacharacter, so the markup stays what it was."""
    if isinstance(value, Markup):
        return Markup(visible(str(value), keep_lines=True))
    if isinstance(value, str):
        return visible(value, keep_lines=True)
    return value


def html_environment(templates_dir: str | None = None) -> Environment:
    """The HTML environment: autoescape on for .html/.html.j2/.xml and for strings, control characters shown
    escaped (html_visible); undefined names fail."""
    return Environment(
        loader=FileSystemLoader(templates_dir or TEMPLATES_DIR),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2", "xml", "svg"), default_for_string=True,
                                     default=True),
        finalize=html_visible,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def markdown_environment(templates_dir: str | None = None) -> Environment:
    """The Markdown environment: no HTML autoescape (Markdown is not HTML); every printed value goes through
    md_escape."""
    return Environment(
        loader=FileSystemLoader(templates_dir or TEMPLATES_DIR),
        autoescape=False,
        finalize=md_escape,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(model: dict[str, Any], templates_dir: str | None = None) -> str:
    return html_environment(templates_dir).get_template("report.html.j2").render(report=model)


# Past this many nodes report.html holds the first of them (failing first) and further pages the rest: a page's
# per-node tables cost a browser about 1 ms a node to load, its folded reasons most (docs/performance.md).
NODES_PER_PAGE = 500
NODE_PAGE_FILE = "report-nodes-%03d.html"
NODE_PAGE_NAME = re.compile(r"^report-nodes-[0-9]{3,}\.html$")


def node_pages(total: int, page_size: int = NODES_PER_PAGE) -> list[dict[str, Any]]:
    """The pages of ``total`` nodes: ``index`` (1-based), ``file``, ``first`` and ``last`` node (1-based)."""
    return [{"index": number, "file": "report.html" if number == 1 else NODE_PAGE_FILE % number,
             "first": first + 1, "last": min(first + page_size, total)}
            for number, first in enumerate(range(0, total, page_size), start=1)]


def render_html_pages(model: dict[str, Any], templates_dir: str | None = None,
                      page_size: int = NODES_PER_PAGE) -> list[tuple[str, str]]:
    """``[(file name, HTML)]``: report.html alone up to ``page_size`` nodes; past it report.html with the fleet's
    sections and the per-node rows of the first ``page_size`` nodes, and one further page per ``page_size`` more
    (_page_view: which rows are a node's)."""
    nodes = model["nodes"]
    if len(nodes) <= page_size:
        return [("report.html", render_html(model, templates_dir))]
    environment = html_environment(templates_dir)
    pages = node_pages(len(nodes), page_size)
    rendered = []
    for page in pages:
        view = _page_view(model, nodes[page["first"] - 1:page["last"]])
        view["pager"] = {"pages": pages, "current": page["index"], "total": len(nodes)}
        template = "report.html.j2" if page["index"] == 1 else "report_nodes.html.j2"
        rendered.append((page["file"], environment.get_template(template).render(report=view)))
    return rendered


def _page_view(model: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The model for a page of ``nodes``: its per-node rows (node tables, GPU values unlike the majority, priced nodes
    that are not offers) of those nodes only."""
    hosts = {node["host"] for node in nodes}
    view = dict(model, nodes=nodes, gpu_flagged=[row for row in model["gpu_flagged"] if row["host"] in hosts])
    if model.get("cost") is not None:
        not_offers = [row for row in model["cost"]["not_offers"] if row["host"] in hosts]
        view["cost"] = dict(model["cost"], not_offers=not_offers)
    return view


def _write_html(path: str, model: dict[str, Any], templates_dir: str | None) -> None:
    """report.html at ``path`` and the further pages beside it; a page an earlier, longer render left is removed."""
    folder = os.path.dirname(path)
    written = set()
    for name, text in render_html_pages(model, templates_dir, NODES_PER_PAGE):
        target = path if name == "report.html" else os.path.join(folder, name)
        write_text_atomic(target, text)
        written.add(os.path.basename(target))
    for name in os.listdir(folder):
        if NODE_PAGE_NAME.match(name) and name not in written:
            os.remove(os.path.join(folder, name))


def render_markdown(model: dict[str, Any], templates_dir: str | None = None) -> str:
    return markdown_environment(templates_dir).get_template("report.md.j2").render(report=model)


def _case_name(item: dict[str, Any], seen: dict[str, int]) -> str:
    name = str(item.get("id"))
    if item.get("subject"):
        name = "%s [%s]" % (name, item["subject"])
    seen[name] = seen.get(name, 0) + 1
    if seen[name] > 1:
        name = "%s #%d" % (name, seen[name])
    return name


def _check_text(item: dict[str, Any]) -> str:
    parts = [str(item.get("message") or "")]
    for key in ("measured", "expected", "threshold_source"):
        if item.get(key) is not None:
            value = item[key]
            shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            parts.append("%s: %s" % (key, shown))
    return "\n".join(parts)


def _evidence_cases(host: str, record: dict[str, Any], counts: dict[str, int]) -> list[ET.Element]:
    """The node's required evidence as testcases: each unverified item ``<skipped>`` with its reason, and an
    INCOMPLETE node one failed ``node.evidence`` testcase naming every unverified item (docs/report.md)."""
    coverage = record.get("coverage") if isinstance(record.get("coverage"), dict) else None
    if coverage is None:
        return []
    cases = []
    for item in coverage.get("items") or []:
        if not isinstance(item, dict) or item.get("status") != "unverified":
            continue
        name = xml_text("evidence.%s" % item.get("item"))
        case = ET.Element("testcase", classname=xml_text(host), name=name, time="0")
        why = "not verified: %s: %s" % (item.get("label"), item.get("reason"))
        ET.SubElement(case, "skipped", message=xml_text(why))
        counts["skipped"] += 1
        cases.append(case)
    if record.get("verdict") == "INCOMPLETE":
        reasons = [str(reason) for reason in coverage.get("incomplete") or []]
        case = ET.Element("testcase", classname=xml_text(host), name="node.evidence", time="0")
        message = xml_text("INCOMPLETE: %d required item(s) not verified" % len(reasons))
        failure = ET.SubElement(case, "failure", message=message, type="incomplete")
        failure.text = xml_text("\n".join(reasons))
        counts["failures"] += 1
        cases.append(case)
    return cases


# the counters of a testsuite and of the testsuites, in the order junit.xml carries them
JUNIT_COUNTS = ("tests", "failures", "errors", "skipped")


def render_junit(results: dict[str, Any]) -> bytes:
    """JUnit XML (gpufleet/report/schemas/junit.xsd): one testsuite per node, one testcase per check of that node."""
    return b"".join(junit_pieces(results))


def junit_pieces(results: dict[str, Any]) -> list[bytes]:
    """:func:`render_junit`'s bytes in pieces, one per node. Each node's testsuite is serialized on its own and let
    go: a 10,000-node fleet is never one tree, nor one string, in memory (written piece by piece)."""
    totals = dict.fromkeys(JUNIT_COUNTS, 0)
    run = results.get("run") or {}
    pieces = []
    for host in sorted(results.get("hosts") or {}):
        suite, counts = _host_suite(host, results["hosts"][host], results, run)
        for key, value in counts.items():
            totals[key] += value
        ET.indent(suite, level=1)
        pieces.append(("\n  " + ET.tostring(suite, encoding="unicode")).encode("utf-8"))
    root = ET.Element("testsuites", name=xml_text("gpufleet acceptance %s" % (run.get("run_id") or "")))
    for key, value in totals.items():
        root.set(key, str(value))
    head = '<?xml version="1.0" encoding="UTF-8"?>\n'
    if not pieces:
        return [(head + ET.tostring(root, encoding="unicode") + "\n").encode("utf-8")]
    # the start tag as ElementTree writes it (attributes escaped), the suites indented as ET.indent would
    start = ET.tostring(root, encoding="unicode", short_empty_elements=False)[:-len("</testsuites>")]
    return [(head + start).encode("utf-8")] + pieces + [b"\n</testsuites>\n"]


def _host_suite(host: str, record: dict[str, Any], results: dict[str, Any],
                run: dict[str, Any]) -> tuple[ET.Element, dict[str, int]]:
    """The node's testsuite and its counts: its properties, one testcase per check (an unreachable node one
    failed ``node.reachable``), its evidence testcases, else one skipped ``node.judged``."""
    suite = ET.Element("testsuite", name=xml_text(host))
    _suite_properties(suite, record, results, run)
    counts = dict.fromkeys(JUNIT_COUNTS, 0)
    seen: dict[str, int] = {}
    cases = []
    if record.get("unreachable"):
        cases.append(_unreachable_case(host, record["unreachable"], counts))
    for item in record.get("checks") or []:
        cases.append(_check_case(host, item, seen, counts))
    cases.extend(_evidence_cases(host, record, counts))
    if not cases:
        case = ET.Element("testcase", classname=xml_text(host), name="node.judged", time="0")
        ET.SubElement(case, "skipped", message="not judged yet: the run has no checks for this node")
        counts["skipped"] += 1
        cases.append(case)
    counts["tests"] = len(cases)
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", "0")
    suite.extend(cases)
    return suite, counts


def _suite_properties(suite: ET.Element, record: dict[str, Any], results: dict[str, Any], run: dict[str, Any]) -> None:
    """The node's verdict, profile and level as testsuite properties, and the label of an ACCEPT that rests on
    facts alone."""
    props = ET.SubElement(suite, "properties")
    coverage = record.get("coverage")
    if not isinstance(coverage, dict):
        coverage = {}
    # the level the node was judged at (its coverage), else the run's (fleet.json, run.json settings)
    level = (coverage.get("level") or (results.get("fleet") or {}).get("level")
             or (run.get("settings") or {}).get("level"))
    for key, value in (("verdict", record.get("verdict")), ("profile", (record.get("profile") or {}).get("name")),
                       ("level", level)):
        ET.SubElement(props, "property", name=key, value=xml_text(value or ""))
    if coverage.get("label") and record.get("verdict") in ACCEPTED:
        # "static checks only": an ACCEPT that rests on facts alone, for CI to tell from a measured one
        ET.SubElement(props, "property", name="label", value=xml_text(coverage["label"]))


def _unreachable_case(host: str, unreachable: Any, counts: dict[str, int]) -> ET.Element:
    """The failed ``node.reachable`` testcase of a node ssh could not reach."""
    case = ET.Element("testcase", classname=xml_text(host), name="node.reachable", time="0")
    failure = ET.SubElement(case, "failure", message=xml_text("UNREACHABLE: %s" % unreachable), type="unreachable")
    failure.text = xml_text(unreachable)
    counts["failures"] += 1
    return case


def _check_case(host: str, item: dict[str, Any], seen: dict[str, int], counts: dict[str, int]) -> ET.Element:
    """One check as a testcase: fail -> ``<failure>``, error -> ``<error>``, skip -> ``<skipped>``, warn -> its text
    in ``<system-out>``, pass -> a bare testcase."""
    case = ET.Element("testcase", classname=xml_text(host), name=xml_text(_case_name(item, seen)), time="0")
    status = item.get("status")
    message = xml_text(item.get("message") or "")
    if status == "fail":
        ET.SubElement(case, "failure", message=message, type="fail").text = xml_text(_check_text(item))
        counts["failures"] += 1
    elif status == "error":
        ET.SubElement(case, "error", message=message, type="error").text = xml_text(_check_text(item))
        counts["errors"] += 1
    elif status == "skip":
        ET.SubElement(case, "skipped", message=message)
        counts["skipped"] += 1
    elif status == "warn":
        ET.SubElement(case, "system-out").text = xml_text("WARN: " + _check_text(item))
    return case


def _write_format(name: str, path: str, results: dict[str, Any], model: dict[str, Any],
                  templates_dir: str | None) -> None:
    """Write one of the report's files (``name`` of FORMATS) at ``path``."""
    if name == "html":
        _write_html(path, model, templates_dir)
    elif name == "md":
        write_text_atomic(path, render_markdown(model, templates_dir))
    elif name == "json":
        document = results_document(results, generated=model["generated"], model=model)
        # compact: without indent json uses its C encoder (1,024 nodes: 0.3 s instead of 1.5 s, 31 MB instead of 44 MB)
        text = json.dumps(document, sort_keys=True, default=str, separators=(",", ":")) + "\n"
        write_bytes_atomic(path, text.encode("utf-8"))
    else:
        write_bytes_atomic(path, junit_pieces(results))


def render_report(results_dir: str, output_dir: str | None = None, formats: Sequence[str] = FORMATS,
                  profiles_dir: str | None = None, title: str | None = None, templates_dir: str | None = None,
                  reference_job: Any = None) -> dict[str, Any]:
    """Render ``results_dir`` into ``output_dir`` (default: the results directory itself); ``reference_job``: the cost
    view's job (report/cost.py ``validate_job``; ReportError when invalid), else run.json ``settings.reference_job``.

    Returns ``{"files": {format: path}, "verdict", "counts", "nodes", "failing"}``. ReportError
    when the directory is not a gpufleet results directory or a format is unknown, and after the other
    files are written when one could not be (naming it and what was written): one file's failure never
    costs the others, results.json included. A node whose data breaks its row is shown with the error
    on its row (nodes.py `node_row`); every other node renders.
    """
    unknown = [name for name in formats if name not in FORMATS]
    if unknown:
        raise ReportError("unknown report format(s) %s (known: %s)" % (", ".join(unknown), ", ".join(FORMATS)))
    if reference_job is not None:
        try:
            validate_job(reference_job)
        except ReferenceJobError as exc:
            raise ReportError(str(exc)) from None
    results = load_results(results_dir)
    model = build_model(results, profiles=load_profile_thresholds(profiles_dir), title=title, job=reference_job)
    model["generated"] = utc_now()
    out = os.path.abspath(output_dir or results["path"])
    os.makedirs(out, exist_ok=True)
    files, failed = {}, []
    for name in formats:
        path = os.path.join(out, FILE_NAMES[name])
        try:
            _write_format(name, path, results, model, templates_dir)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the other files are still written
            failed.append("%s: %s" % (FILE_NAMES[name], error_words(exc)))
            continue
        files[name] = path
    if failed:
        raise ReportError("not written: %s; written: %s" % ("; ".join(failed), ", ".join(
            FILE_NAMES[name] for name in files) or "nothing"))
    return {
        "files": files,
        "verdict": model["fleet"]["verdict"],
        "counts": {item["verdict"]: item["count"] for item in model["fleet"]["counts"]},
        "nodes": model["fleet"]["nodes"],
        "failing": [node["host"] for node in model["failing"]],
    }

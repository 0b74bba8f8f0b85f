# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""junit.xml: one testsuite per node, one testcase per check of that node (gpufleet/report/schemas/junit.xsd).

A check's status is its testcase's child: fail -> ``<failure>``, error -> ``<error>``, skip -> ``<skipped>``, warn ->
its text in ``<system-out>``, pass -> a bare testcase. An unreachable node is one failed ``node.reachable``; each
required item not verified is an ``evidence.<item>`` testcase ``<skipped>`` with its reason, and an INCOMPLETE node one
failed ``node.evidence``; a node with none of these one skipped ``node.judged``.

The file is written as text, a testsuite at a time, laid out as ElementTree's ``indent`` and ``tostring`` lay out the
same tree (two spaces a level, an empty element as ``<tag />``, attributes in the order written): at 10,000 nodes the
file holds 874,000 testcases, and building them as Elements took 11 s of a 70 s report.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Iterable, Iterator, Optional, Sequence

from gpufleet.checks.model import ACCEPTED
from gpufleet.text import visible

# Characters XML 1.0 cannot carry at all (a node's output may hold any byte).
_XML_INVALID = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# what character data escapes, and attribute values besides (ElementTree's _escape_cdata, _escape_attrib): a replace
# for each that is there (str.translate looks up every character: 0.6 s of 2,000 nodes' file; xml.sax.saxutils.escape
# replaces each entity unguarded, a quarter slower over the file)
_CDATA = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
_ATTRIB = _CDATA + (('"', "&quot;"), ("\r", "&#13;"), ("\n", "&#10;"), ("\t", "&#09;"))
# the counters of a testsuite and of the testsuites, in the order junit.xml carries them
JUNIT_COUNTS = ("tests", "failures", "errors", "skipped")
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
# A testcase's child element, as written (:func:`_element`), or None for a bare testcase.
Child = Optional[str]


def xml_text(value: Any) -> str:
    """Text for junit.xml, shown as report.md and report.html show it: control, separator and bidi characters from a
    node (ESC, NUL, U+202E) become ``\\x1b``, ``\\x00``, ``\\u202e`` (gpufleet/text.py ``visible``; newlines and tabs
    kept), and so does what else XML 1.0 cannot carry (a lone surrogate, U+FFFE); the writer escapes the rest."""
    text = visible(value, keep_lines=True)
    # what visible leaves of ASCII is tab, newline and printable: all of it XML 1.0 carries
    return text if text.isascii() else _XML_INVALID.sub(_xml_escape, text)


@functools.lru_cache(maxsize=65536)
def _name_attribute(name: str) -> str:
    """A testcase's name as its attribute's value (:func:`xml_text`, escaped), each once: a fleet's nodes share most of
    their check names."""
    return _escaped(xml_text(name), _ATTRIB)


def _xml_escape(match: re.Match[str]) -> str:
    """A character XML 1.0 cannot carry as ``\\xNN`` (below 256) or ``\\uNNNN``."""
    code = ord(match.group(0))
    return "\\x%02x" % code if code < 256 else "\\u%04x" % code


def _escaped(text: str, table: Sequence[tuple[str, str]]) -> str:
    """``text`` with each character of ``table`` replaced by its entity."""
    for character, entity in table:
        if character in text:
            text = text.replace(character, entity)
    return text


def _attributes(pairs: Sequence[tuple[str, str]]) -> str:
    """`` name="value"`` for each pair, each value XML text already (xml_text) and escaped here."""
    return "".join(' %s="%s"' % (name, _escaped(value, _ATTRIB)) for name, value in pairs)


def _element(tag: str, pairs: Sequence[tuple[str, str]], text: str | None) -> str:
    """A childless element: ``<tag a="v" />``, or ``<tag a="v">text</tag>`` when it has text."""
    if text:
        return "<%s%s>%s</%s>" % (tag, _attributes(pairs), _escaped(text, _CDATA), tag)
    return "<%s%s />" % (tag, _attributes(pairs))


def render_junit(results: dict[str, Any]) -> bytes:
    """junit.xml of ``results`` (report/model.py ``load_results``) as one document."""
    return b"".join(junit_pieces(results))


def junit_pieces(results: dict[str, Any]) -> list[bytes]:
    """:func:`render_junit`'s bytes in pieces: the head, one per node, the end."""
    totals = dict.fromkeys(JUNIT_COUNTS, 0)
    suites = []
    for host in sorted(results.get("hosts") or {}):
        suite, counts = host_suite(host, results["hosts"][host], results)
        add_counts(totals, counts)
        suites.append(suite)
    return list(junit_document(results, totals, suites))


def add_counts(totals: dict[str, int], counts: dict[str, int]) -> None:
    """Add a testsuite's ``counts`` to the ``totals`` of the testsuites (JUNIT_COUNTS)."""
    for key in JUNIT_COUNTS:
        totals[key] += counts[key]


def junit_document(results: dict[str, Any], totals: dict[str, int], suites: Iterable[bytes]) -> Iterator[bytes]:
    """The file, piece by piece (a 10,000-node fleet's is never one string in memory): the head with ``totals``, the
    ``suites`` (:func:`host_suite`'s, in order of host), the end. Every node has a testcase (``node.judged`` at least),
    so no tests is no node: one empty ``<testsuites />``."""
    run = results.get("run") or {}
    root = [("name", xml_text("gpufleet acceptance %s" % (run.get("run_id") or "")))]
    root += [(key, str(totals[key])) for key in JUNIT_COUNTS]
    if not totals["tests"]:
        yield (HEAD + _element("testsuites", root, None) + "\n").encode("utf-8")
        return
    yield (HEAD + "<testsuites%s>" % _attributes(root)).encode("utf-8")
    yield from suites
    yield b"\n</testsuites>\n"


def host_suite(host: str, record: dict[str, Any], results: dict[str, Any]) -> tuple[bytes, dict[str, int]]:
    """The node's testsuite (a newline and two spaces before it) in UTF-8, and its counts; ``results``: the run's
    ``run`` and ``fleet`` (for the level a node was judged at)."""
    run = results.get("run") or {}
    counts = dict.fromkeys(JUNIT_COUNTS, 0)
    cases = list(_cases(host, record, counts))
    counts["tests"] = len(cases)
    shown = xml_text(host)
    classname = _escaped(shown, _ATTRIB)
    lines = ["\n  <testsuite%s>" % _attributes([("name", shown)] + [
        (key, str(counts[key])) for key in JUNIT_COUNTS] + [("time", "0")])]
    lines.append("\n    <properties>")
    lines.extend("\n      " + _element("property", [("name", name), ("value", value)], None)
                 for name, value in _properties(record, results, run))
    lines.append("\n    </properties>")
    for name, child in cases:
        start = '\n    <testcase classname="%s" name="%s" time="0"' % (classname, _name_attribute(name))
        if child is None:
            lines.append(start + " />")
        else:
            lines.append("%s>\n      %s\n    </testcase>" % (start, child))
    lines.append("\n  </testsuite>")
    return "".join(lines).encode("utf-8"), counts


def _properties(record: dict[str, Any], results: dict[str, Any], run: dict[str, Any]) -> list[tuple[str, str]]:
    """The node's verdict, profile and level, and the label of an ACCEPT that rests on facts alone."""
    coverage = record.get("coverage")
    if not isinstance(coverage, dict):
        coverage = {}
    # the level the node was judged at (its coverage), else the run's (fleet.json, run.json settings)
    level = (coverage.get("level") or (results.get("fleet") or {}).get("level")
             or (run.get("settings") or {}).get("level"))
    pairs = [(key, xml_text(value or "")) for key, value in (
        ("verdict", record.get("verdict")), ("profile", (record.get("profile") or {}).get("name")), ("level", level))]
    if coverage.get("label") and record.get("verdict") in ACCEPTED:
        # "static checks only": an ACCEPT that rests on facts alone, for CI to tell from a measured one
        pairs.append(("label", xml_text(coverage["label"])))
    return pairs


def _cases(host: str, record: dict[str, Any], counts: dict[str, int]) -> Iterator[tuple[str, Child]]:
    """``(name, child)`` of each of the node's testcases (its name as given: host_suite makes it XML text), counted
    into ``counts``."""
    judged = False
    if record.get("unreachable"):
        judged = True
        counts["failures"] += 1
        unreachable = record["unreachable"]
        yield "node.reachable", _element("failure", [("message", xml_text("UNREACHABLE: %s" % unreachable)),
                                                     ("type", "unreachable")], xml_text(unreachable))
    seen: dict[str, int] = {}
    for item in record.get("checks") or []:
        if not isinstance(item, dict):
            continue  # no check result (a damaged record): the report's node row leaves it out alike (nodes.py)
        judged = True
        yield _case_name(item, seen), _check_child(item, counts)
    for case in _evidence_cases(record, counts):
        judged = True
        yield case
    if not judged:
        counts["skipped"] += 1
        yield "node.judged", _skipped("not judged yet: the run has no checks for this node")


def _case_name(item: dict[str, Any], seen: dict[str, int]) -> str:
    """``id [subject]``, numbered ``#2``, ``#3`` when the node has it more than once."""
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


def _check_child(item: dict[str, Any], counts: dict[str, int]) -> Child:
    """A check's testcase child by its status (the module docstring); None for a pass or an unknown status."""
    status = item.get("status")
    if status == "warn":
        return _element("system-out", (), xml_text("WARN: " + _check_text(item)))
    if status not in ("fail", "error", "skip"):
        return None
    if status == "skip":
        counts["skipped"] += 1
        return _skipped(str(item.get("message") or ""))
    counts["failures" if status == "fail" else "errors"] += 1
    message = ("message", xml_text(item.get("message") or ""))
    return _element("failure" if status == "fail" else "error", [message, ("type", status)],
                    xml_text(_check_text(item)))


@functools.lru_cache(maxsize=65536)
def _skipped(message: str) -> str:
    """``<skipped message="..." />``, each once: a fleet's nodes skip their checks for the same few reasons (a node
    judged at level quick skips most)."""
    return _element("skipped", [("message", xml_text(message))], None)


def _evidence_cases(record: dict[str, Any], counts: dict[str, int]) -> Iterator[tuple[str, Child]]:
    """The node's required evidence: each unverified item ``<skipped>`` with its reason, and an INCOMPLETE node one
    failed ``node.evidence`` naming every unverified item (docs/report.md)."""
    coverage = record.get("coverage")
    if not isinstance(coverage, dict):
        return
    for item in coverage.get("items") or []:
        if not isinstance(item, dict) or item.get("status") != "unverified":
            continue
        counts["skipped"] += 1
        why = "not verified: %s: %s" % (item.get("label"), item.get("reason"))
        yield "evidence.%s" % item.get("item"), _skipped(why)
    if record.get("verdict") == "INCOMPLETE":
        reasons = [str(reason) for reason in coverage.get("incomplete") or []]
        counts["failures"] += 1
        message = xml_text("INCOMPLETE: %d required item(s) not verified" % len(reasons))
        yield "node.evidence", _element("failure", [("message", message), ("type", "incomplete")],
                                        xml_text("\n".join(reasons)))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""junit.xml as text (gpufleet/report/junit.py): its exact layout for a hand-written run, and what an XML reader gets
back from node text that holds markup, quotes, tabs, newlines and control characters. The records are written here
by hand; the expected text is worked out from them, not taken from a render."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpufleet.report.junit import junit_pieces, render_junit


def _record(host, checks, verdict="REJECT", **extra):
    record = {"host": host, "verdict": verdict, "profile": {"name": "hgx-h100-8"}, "checks": checks,
              "coverage": {"level": "quick"}}
    record.update(extra)
    return record


def _check(check_id, status, message, **extra):
    return {"id": check_id, "status": status, "message": message, **extra}


def test_the_layout_of_a_two_node_run():
    results = {"run": {"run_id": "r1"}, "fleet": None, "hosts": {
        "n2": _record("n2", [_check("gpu.count", "pass", "8 GPUs")], verdict="ACCEPT"),
        "n1": _record("n1", [_check("gpu.ecc", "fail", "ECC off", measured=False, expected=True),
                             _check("gpu.mig", "skip", "not judged"),
                             _check("host.memlock", "warn", "64 KiB"),
                             _check("gpu.clocks", "error", "")]),
    }}
    expected = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<testsuites name="gpufleet acceptance r1" tests="5" failures="1" errors="1" skipped="1">'
        '\n  <testsuite name="n1" tests="4" failures="1" errors="1" skipped="1" time="0">'
        '\n    <properties>'
        '\n      <property name="verdict" value="REJECT" />'
        '\n      <property name="profile" value="hgx-h100-8" />'
        '\n      <property name="level" value="quick" />'
        '\n    </properties>'
        '\n    <testcase classname="n1" name="gpu.ecc" time="0">'
        '\n      <failure message="ECC off" type="fail">ECC off\nmeasured: false\nexpected: true</failure>'
        '\n    </testcase>'
        '\n    <testcase classname="n1" name="gpu.mig" time="0">'
        '\n      <skipped message="not judged" />'
        '\n    </testcase>'
        '\n    <testcase classname="n1" name="host.memlock" time="0">'
        '\n      <system-out>WARN: 64 KiB</system-out>'
        '\n    </testcase>'
        '\n    <testcase classname="n1" name="gpu.clocks" time="0">'
        '\n      <error message="" type="error" />'
        '\n    </testcase>'
        '\n  </testsuite>'
        '\n  <testsuite name="n2" tests="1" failures="0" errors="0" skipped="0" time="0">'
        '\n    <properties>'
        '\n      <property name="verdict" value="ACCEPT" />'
        '\n      <property name="profile" value="hgx-h100-8" />'
        '\n      <property name="level" value="quick" />'
        '\n    </properties>'
        '\n    <testcase classname="n2" name="gpu.count" time="0" />'
        '\n  </testsuite>'
        '\n</testsuites>\n')
    assert render_junit(results).decode("utf-8") == expected
    # one piece for the head, one per node, one for the end
    assert len(junit_pieces(results)) == 4


def test_an_empty_fleet_is_one_empty_element():
    assert render_junit({"run": {"run_id": "r0"}, "hosts": {}}) == (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<testsuites name="gpufleet acceptance r0" tests="0" failures="0" errors="0" skipped="0" />\n')


def test_a_reader_gets_node_text_back_as_the_report_shows_it():
    host = 'n"<&>'
    message = 'tab\there "quoted" <b>&amp;\nline two\x1b[2J\u202e'
    results = {"run": {}, "hosts": {host: _record(host, [
        _check("gpu.name", "fail", message, subject="GPU0", measured="A\tB", expected={"k": "<v>"}),
        _check("gpu.name", "fail", "again", subject="GPU0")])}}
    text = render_junit(results).decode("utf-8")
    assert "\x1b" not in text and "\u202e" not in text
    suite = ET.fromstring(text.encode("utf-8")).find("testsuite")
    assert suite.get("name") == host
    first, second = suite.findall("testcase")
    assert (first.get("classname"), first.get("name")) == (host, "gpu.name [GPU0]")
    assert second.get("name") == "gpu.name [GPU0] #2"
    shown = 'tab\there "quoted" <b>&amp;\nline two\\x1b[2J\\u202e'
    failure = first.find("failure")
    assert failure.get("message") == shown
    assert failure.text == shown + '\nmeasured: A\tB\nexpected: {"k": "<v>"}'


def test_an_unreachable_node_and_a_node_without_checks():
    results = {"run": {}, "hosts": {
        "gone": {"host": "gone", "verdict": "UNREACHABLE", "unreachable": "ssh: Connection refused"},
        "new": {"host": "new"}}}
    root = ET.fromstring(render_junit(results))
    gone, new = root.findall("testsuite")
    case, = gone.findall("testcase")
    assert case.get("name") == "node.reachable"
    assert (case.find("failure").get("message"), case.find("failure").text) == (
        "UNREACHABLE: ssh: Connection refused", "ssh: Connection refused")
    case, = new.findall("testcase")
    assert (case.get("name"), case.find("skipped").get("message")) == (
        "node.judged", "not judged yet: the run has no checks for this node")
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("2", "1", "1")


def test_what_is_no_check_result_is_left_out_not_the_file():
    """A damaged record's checks list holding other things: the node's check results are its testcases, the rest is
    left out (as its row of the report leaves it out), and every other node is in the file."""
    results = {"run": {}, "hosts": {
        "bad": _record("bad", ["a bare string", 7, _check("gpu.count", "fail", "4 GPUs")]),
        "odd": _record("odd", ["only a string"], verdict=None),
        "ok": _record("ok", [_check("gpu.count", "pass", "8 GPUs")], verdict="ACCEPT")}}
    root = ET.fromstring(render_junit(results))
    bad, odd, ok = root.findall("testsuite")
    assert [case.get("name") for case in bad.findall("testcase")] == ["gpu.count"]
    assert [case.get("name") for case in odd.findall("testcase")] == ["node.judged"]
    assert [case.get("name") for case in ok.findall("testcase")] == ["gpu.count"]
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")

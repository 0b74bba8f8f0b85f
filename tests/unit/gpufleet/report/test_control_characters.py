# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Control characters from a node reach no report raw: report.md and report.html show them as ``\\x1b``-style
escapes (gpufleet/text.py), as the CLI summary does.

SYNTHETIC hostile node, written here: a hostname holding a terminal escape sequence (ESC [ 2 J, clear the
screen), a right-to-left override (U+202E) and a NUL, and a tool message holding ESC, a bidi isolate and a
C1 control (U+009B, the one-byte CSI).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpufleet.report.junit import xml_text
from gpufleet.report.render import render_report
from gpufleet.report.templating import html_environment, html_visible, md_escape
from gpufleet.results.store import RunDir
from gpufleet.text import one_line, visible

EVIL_HOST = "node-\x1b[2J\u202eevil\x00"
EVIL_MESSAGE = "xid 79 \x1b]0;owned\x07 on GPU\u20661\u2069 \x9b31m"
RAW = ("\x1b", "\u202e", "\x00", "\x07", "\u2066", "\u2069", "\x9b")


def _hostile(small_run):
    """small_run (conftest.py) plus the hostile node, REJECTed by one check quoting the message."""
    run = RunDir.open(small_run)
    record = run.new_host_record(EVIL_HOST)
    record.update({"verdict": "REJECT", "failed": ["host.xid"], "profile": {"name": "hgx-h100-8", "reason": "test"},
                   "checks": [{"id": "host.xid", "status": "fail", "subject": None, "measured": EVIL_MESSAGE,
                               "expected": "no Xid", "threshold_source": "profile", "message": EVIL_MESSAGE}],
                   "phases": {"facts": {"complete": True, "finished": "2026-01-31T12:00:00Z"}}})
    run.write_host(record)
    return small_run


def test_the_helper_escapes_and_keeps_what_it_must():
    assert visible("a\x1b[2Jb\u202ec\x00d") == "a\\x1b[2Jb\\u202ec\\x00d"
    assert visible("line1\n\tline2\x1b", keep_lines=True) == "line1\n\tline2\\x1b"
    assert visible("line1\nline2") == "line1\\x0aline2"
    assert one_line("  a \x1b[0m\n b ", 80) == "a \\x1b[0m b"
    assert visible(visible("\x1b")) == "\\x1b"  # once escaped, nothing is left to escape
    # printable ASCII passes as it is; DEL, the one control above space, does not; nor does text past ASCII
    assert visible(" ~plain <text> & 'quotes'") == " ~plain <text> & 'quotes'" and visible("") == ""
    assert visible("a\x7fb") == "a\\x7fb" and visible("a\x7fb", keep_lines=True) == "a\\x7fb"
    assert visible("é\u200eü\x85") == "é\\u200eü\\x85" and visible("GPU → 8") == "GPU → 8"


def test_markdown_report_shows_control_characters_escaped(small_run, tmp_path):
    files = render_report(_hostile(small_run), output_dir=str(tmp_path / "out"), formats=["md"])["files"]
    text = open(files["md"], encoding="utf-8").read()
    for char in RAW:
        assert char not in text, repr(char)
    # the hostname: [ is Markdown, backslash-escaped; the control characters escaped after that, as typed
    assert "node-\\x1b\\[2J\\u202eevil\\x00" in text
    assert "xid 79 \\x1b]0;owned\\x07 on GPU\\u20661\\u2069 \\x9b31m" in text.replace("\\]", "]")
    assert md_escape("a\x1bb") == "a\\x1bb"


def test_html_report_shows_control_characters_escaped(small_run, tmp_path):
    files = render_report(_hostile(small_run), output_dir=str(tmp_path / "out"), formats=["html"])["files"]
    html = open(files["html"], encoding="utf-8").read()
    for char in RAW:
        assert char not in html, repr(char)
    assert "node-\\x1b[2J\\u202eevil\\x00" in html
    assert "xid 79 \\x1b]0;owned\\x07 on GPU\\u20661\\u2069 \\x9b31m" in html
    # escaped after autoescape, not stripped, and markup stays markup
    assert str(html_visible("<b>\x1b</b>")) == "<b>\\x1b</b>"


def test_junit_shows_control_characters_escaped(small_run, tmp_path):
    # junit.xml carries the hostname in suite, classname and property attributes, and the message in failure
    # attributes and text: U+202E and the rest escaped there as in report.md and report.html
    files = render_report(_hostile(small_run), output_dir=str(tmp_path / "out"), formats=["junit"])["files"]
    with open(files["junit"], encoding="utf-8") as handle:
        junit = handle.read()
    for char in RAW:
        assert char not in junit, repr(char)
    suite, = [suite for suite in ET.fromstring(junit.encode("utf-8")).findall("testsuite")
              if suite.get("name").startswith("node-")]
    assert suite.get("name") == "node-\\x1b[2J\\u202eevil\\x00"
    case = suite.find("testcase")
    assert case.get("classname") == "node-\\x1b[2J\\u202eevil\\x00"
    assert case.find("failure").get("message") == "xid 79 \\x1b]0;owned\\x07 on GPU\\u20661\\u2069 \\x9b31m"
    # a multi-line text keeps its lines (as report.html's <pre>): only the characters that are not text are escaped
    assert case.find("failure").text.splitlines()[0] == "xid 79 \\x1b]0;owned\\x07 on GPU\\u20661\\u2069 \\x9b31m"
    assert xml_text("GPU\u202e0\nline2\tend") == "GPU\\u202e0\nline2\tend"


def test_a_key_of_node_data_never_hides_a_method_of_its_dict():
    """The environment reads ``d.name`` of a dict as its key first (templating.py ReportEnvironment); a key a node's
    data names like a dict method (a check status "get") must not take the method's place."""
    template = html_environment().from_string(
        "{{ d.host }}|{{ d.get('fail', 0) }}|{{ d.items()|list|length }}|{{ d.missing is defined }}|{{ d.x.y }}")
    data = {"host": "n1<b>", "get": "not a method", "items": 5, "fail": 2, "x": {"y": "&"}}
    assert template.render(d=data) == "n1&lt;b&gt;|2|5|False|&amp;"

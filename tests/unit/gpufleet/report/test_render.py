# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/render.py: the four files, their schemas, and escaping of a hostile node in HTML, Markdown and JUnit.

The hostile node (fixture ``hostile_run`` in conftest.py) is SYNTHETIC: a real recording with its first GPU's
product name replaced by markup and a script tag, parsed by the real parser, under a hostname carrying markup.
"""

from __future__ import annotations

import gc
import json
import os
import xml.etree.ElementTree as ET

import jsonschema
import pytest
import xmlschema

from gpufleet.report.model import ReportError
from gpufleet.report import render
from gpufleet.report.junit import xml_text
from gpufleet.report.gpu_view import GpuCell
from gpufleet.report.render import render_report
from gpufleet.report.templating import gpu_rows_html, md_escape
from gpufleet.results.compact import expand_document
from gpufleet.results.store import safe_name

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
JSON_SCHEMA = os.path.join(REPO_ROOT, "gpufleet", "report", "schemas", "results.schema.json")
JUNIT_XSD = os.path.join(REPO_ROOT, "gpufleet", "report", "schemas", "junit.xsd")

# as in conftest.py (the hostile_run fixture)
HOSTILE_GPU = '<script>alert("gpu")</script><img src=x onerror=alert(1)>*bold*|pipe'
HOSTILE_HOST = "node-<b>evil</b>&<script>alert('host')</script>"


def test_html_escapes_every_node_string(hostile_run, tmp_path):
    files = render_report(hostile_run, output_dir=str(tmp_path / "out"))["files"]
    html = open(files["html"], encoding="utf-8").read()
    assert "<script" not in html.lower()  # the page has no script of its own, and none injected
    assert "<img" not in html and "<b>evil</b>" not in html and "<i>no</i>" not in html
    assert "&lt;script&gt;alert(&#34;gpu&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;*bold*|pipe" in html
    assert "node-&lt;b&gt;evil&lt;/b&gt;&amp;&lt;script&gt;alert(&#39;host&#39;)&lt;/script&gt;" in html
    assert "&amp;lt;" not in html  # escaped once, never twice
    # self-contained: no external asset, no link to fetch
    for needle in ("<link", "src=\"http", "href=\"http", "url(", "@import"):
        assert needle not in html


def test_markdown_escapes_markdown_and_html(hostile_run, tmp_path):
    files = render_report(hostile_run, output_dir=str(tmp_path / "out"), formats=["md"])["files"]
    text = open(files["md"], encoding="utf-8").read()
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(\"gpu\")&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;\\*bold\\*\\|pipe" in text
    assert "node-&lt;b&gt;evil&lt;/b&gt;&amp;&lt;script&gt;alert('host')&lt;/script&gt;" in text
    # a | from a node cannot split a table row: the summary row has the table's 8 unescaped bars (7 columns), the row
    # of the cost view's "not offers" table its 4 (3 columns)
    rows = [line for line in text.splitlines() if line.startswith("| node-")]
    assert sorted(line.replace("\\|", "").count("|") for line in rows) == [4, 8]
    not_offers = text.split("Not offers (not accepted, never ranked):", 1)[1]
    assert " | REJECT | " in [line for line in not_offers.splitlines() if line.startswith("| node-")][0]
    assert md_escape("a_b*c`d[e]f|g~h#i\\j\nk") == "a\\_b\\*c\\`d\\[e\\]f\\|g\\~h\\#i\\\\j k"


def test_junit_validates_and_round_trips_hostile_text(hostile_run, tmp_path):
    files = render_report(hostile_run, output_dir=str(tmp_path / "out"), formats=["junit"])["files"]
    xmlschema.XMLSchema(JUNIT_XSD).validate(files["junit"])
    root = ET.parse(files["junit"]).getroot()
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert sorted(suites) == sorted(["alpha", "bravo", "charlie", "delta", HOSTILE_HOST])
    hostile = suites[HOSTILE_HOST]
    cases = {case.get("name"): case for case in hostile.findall("testcase")}
    assert {case.get("classname") for case in cases.values()} == {HOSTILE_HOST}
    assert cases["gpu.model [GPU0]"].find("failure").get("message") == "GPU0 is %s, expected NVIDIA H100 80GB HBM3" % HOSTILE_GPU
    assert cases["host.xid"].find("error").get("message") == "kernel log line \\x1b[31mred\\x1b[0m \\x00 broke the check"
    assert cases["nvlink.errors"].find("skipped") is not None
    assert (hostile.get("tests"), hostile.get("failures"), hostile.get("errors"), hostile.get("skipped")) == ("3", "1", "1", "1")
    delta = suites["delta"].findall("testcase")
    assert [(case.get("name"), case.find("failure").get("type")) for case in delta] == [("node.reachable", "unreachable")]
    bravo = {case.get("name"): case for case in suites["bravo"].findall("testcase")}
    assert bravo["gpu.count"].find("failure") is None and bravo["benchmark.allreduce_single_node"].find("failure") is not None
    assert "WARN: GPU3 VBIOS differs" in bravo["gpu.consistency [GPU3]"].find("system-out").text
    # totals: alpha 1, bravo 3, charlie 1, delta 1, hostile 3 testcases
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("9", "3", "1", "1")
    assert xml_text("ok\x07") == "ok\\x07"


def test_results_json_is_the_run_and_validates(hostile_run, tmp_path):
    files = render_report(hostile_run, output_dir=str(tmp_path / "out"), formats=["json"])["files"]
    with open(files["json"], encoding="utf-8") as handle:
        document = json.load(handle)
    with open(JSON_SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(document)
    assert document["schema"] == "gpufleet.results/v2"
    assert document["fleet"]["verdict"] == "REJECT" and document["run"]["run_id"] == "run-small"
    # the hostile node: no facts here (its record, named by its safe file name, holds them); its failed check's
    # fields are indexes into values, the GPU's name among them as the node gave it
    hostile = document["hosts"][HOSTILE_HOST]
    assert "facts" not in hostile and "raw" not in hostile
    assert hostile["record"] == "hosts/%s.json" % safe_name(HOSTILE_HOST) and hostile["record"].count("/") == 1
    values, fields = document["values"], document["fields"]["check"]
    model = dict(zip(fields, (values[index] for index in hostile["checks"][0])))
    assert model == {"id": "gpu.model", "status": "fail", "subject": "GPU0", "measured": HOSTILE_GPU,
                     "expected": "NVIDIA H100 80GB HBM3", "threshold_source": "claim",
                     "message": "GPU0 is %s, expected NVIDIA H100 80GB HBM3" % HOSTILE_GPU}
    # every check of every host, expanded, is a check result of the host record's schema
    check_schema = dict(schema["$defs"]["check"], **{"$defs": schema["$defs"]})
    for host in expand_document(document)["hosts"].values():
        for item in host["checks"]:
            jsonschema.Draft202012Validator(check_schema).validate(item)
    broken = dict(document, hosts={"x": dict(document["hosts"]["alpha"], verdict="MAYBE")})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)
    # a row holds indexes, never the words themselves
    broken = dict(document, hosts={"x": dict(document["hosts"]["alpha"], checks=[["gpu.count", 0]])})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)


def test_default_output_is_the_results_directory_and_bad_input_is_refused(small_run, tmp_path):
    outcome = render_report(small_run)
    assert sorted(os.path.basename(path) for path in outcome["files"].values()) == ["junit.xml", "report.html", "report.md", "results.json"]
    assert all(os.path.dirname(path) == small_run for path in outcome["files"].values())
    assert outcome["verdict"] == "REJECT" and outcome["failing"] == ["bravo", "delta"]
    with pytest.raises(ReportError, match="unknown report format"):
        render_report(small_run, formats=["pdf"])
    with pytest.raises(ReportError, match="not a directory"):
        render_report(str(tmp_path / "missing"))


def test_multi_node_runs_drawn_in_html_and_tabled_in_markdown(multi_run, tmp_path):
    files = render_report(multi_run, output_dir=str(tmp_path / "out"), formats=["html", "md"])["files"]
    html = open(files["html"], encoding="utf-8").read()
    assert 'aria-label="multi-node all-reduce busbw per run"' in html
    assert "<title>alpha + 1 node: 155.6 GB/s, floor 440.0 GB/s</title>" in html
    assert ('<tr class="multi-run" data-first-host="alpha"><td class="mono">alpha, bravo</td><td class="num">2</td>'
            '<td class="num">16</td><td>8 GiB</td><td class="num">155.57 GB/s</td><td class="num">440 GB/s</td>'
            '<td>fail</td></tr>') in html
    assert '<td class="mono">charlie, alpha, bravo</td>' in html and "<td>not judged</td>" in html
    text = open(files["md"], encoding="utf-8").read()
    assert "## Multi-node all-reduce" in text
    assert "| alpha, bravo | 2 | 16 | 8 GiB | 155.57 GB/s | 440 GB/s | fail |" in text
    assert "| charlie, alpha, bravo | 3 | 16 | 8 GiB | 89.9 GB/s |  | not judged |" in text


def test_no_multi_node_section_without_a_multi_node_run(small_run, tmp_path):
    files = render_report(small_run, output_dir=str(tmp_path / "out"), formats=["html", "md"])["files"]
    assert "multi-node all-reduce busbw per run" not in open(files["html"], encoding="utf-8").read()
    assert "## Multi-node all-reduce" not in open(files["md"], encoding="utf-8").read()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_spares_the_records_while_files_are_written_and_is_given_back(
        small_run, tmp_path, monkeypatch, enabled):
    """render.py _long_lived: while a file is written the collector runs (as the caller had it) over what is new, the
    records and the model frozen out of it; after the render, and after one that fails, it is as the caller had it."""
    seen = []
    write = render.ReportFiles.write

    def recording(files, name):
        seen.append((name, gc.isenabled(), gc.get_freeze_count() > 0))
        return write(files, name)

    monkeypatch.setattr(render.ReportFiles, "write", recording)
    (gc.enable if enabled else gc.disable)()
    try:
        render_report(small_run, output_dir=str(tmp_path / "out"))
        assert seen == [(name, enabled, True) for name in render.FORMATS]
        assert (gc.isenabled(), gc.get_freeze_count()) == (enabled, 0)
        with pytest.raises(ReportError):
            render_report(str(tmp_path / "no-such-run"))
        assert (gc.isenabled(), gc.get_freeze_count()) == (enabled, 0)
    finally:
        gc.enable()


def test_gpu_rows_show_and_escape_each_value_as_the_template_does():
    rows = [[GpuCell("0", False, None, None), GpuCell('<b>"x"</b>\x1b\u202e', True, "a&b", "fleet")],
            [GpuCell("1", False, None, None), GpuCell("", False, None, None)]]
    assert gpu_rows_html(rows) == ('<tr><td>0<td class="flag" title="fleet majority: a&amp;b">'
                                   '&lt;b&gt;&#34;x&#34;&lt;/b&gt;\\x1b\\u202e<tr><td>1<td>')
    assert gpu_rows_html([]) == ""

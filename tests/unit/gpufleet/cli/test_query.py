# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`--output json` and `--query EXPR` (JMESPath) of `gpufleet parse/report/validate`, on hand-built
(SYNTHETIC) results directories and a recorded fixture; the expected values are written by hand."""

from __future__ import annotations

import importlib.util
import json
import os

from gpufleet.cli import common, validate
from gpufleet.cli import main as cli

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
# Four ports, two Up (the f1 ones) and two Down.
IBDEV2NETDEV = os.path.join(FIXTURES, "ib", "dgx-spark-gb10-ibdev2netdev-2up-2down.txt")
REJECTED = "values(hosts)[?verdict=='REJECT'].host"


def _records():
    return [
        host_record("gpu-03", "REJECT", [check("gpu.ecc", "fail", "GPU3", message="GPU3: 2 uncorrectable ECC errors")]),
        host_record("gpu-01", "ACCEPT", [check("gpu.count", "pass")]),
        host_record("gpu-04", "UNREACHABLE", unreachable="ssh: connect to host 10.0.0.4 port 22: No route to host"),
        host_record("gpu-02", "REJECT", [check("host.xid", "fail", message="Xid 79 x1")]),
        host_record("gpu-05", "ACCEPT WITH WARNINGS", [check("host.acs", "warn", message="could not verify ACS")]),
    ]


def _fake_renderer(monkeypatch, calls=None):
    def fake_render(results_dir, out_dir):
        if calls is not None:
            calls.append(results_dir)
        return {"files": {"html": os.path.join(out_dir, "report.html")}}

    monkeypatch.setattr(common, "renderer", lambda: (fake_render, ValueError, None))


def test_report_query_prints_the_rejected_nodes_of_a_run_and_writes_nothing(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    calls = []
    _fake_renderer(monkeypatch, calls)
    before = {name: os.stat(os.path.join(results, name)).st_mtime_ns for name in os.listdir(results)}
    code = cli.main(["report", results, "--output", "json", "--query", REJECTED])
    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out) == ["gpu-02", "gpu-03"]  # by host name, as results.json orders them
    # stdout is the JSON alone; the fleet line goes to stderr; nothing was rendered or written
    assert err.splitlines() == ["fleet REJECT: 2 of 5 nodes acceptable; 1 ACCEPT, 1 ACCEPT WITH WARNINGS, 2 REJECT, 1 UNREACHABLE"]
    assert calls == []
    assert {name: os.stat(os.path.join(results, name)).st_mtime_ns for name in os.listdir(results)} == before


def test_report_of_a_directory_that_is_no_run_says_so(tmp_path, capsys):
    (tmp_path / "photos").mkdir()
    assert cli.main(["report", str(tmp_path / "photos")]) == 64
    assert capsys.readouterr().err == (
        "gpufleet report: %s is not a gpufleet results directory (it has no run.json): give the --out directory of a "
        "gpufleet validate run\n" % (tmp_path / "photos"))


def test_report_query_alone_implies_json_and_reads_the_fleet_verdicts(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    _fake_renderer(monkeypatch)
    code = cli.main(["report", results, "--query", "fleet.node_verdicts.\"gpu-04\".[verdict, unreachable]"])
    assert code == 0
    unreachable = "ssh: connect to host 10.0.0.4 port 22: No route to host"
    assert json.loads(capsys.readouterr().out) == ["UNREACHABLE", unreachable]


def test_report_output_json_is_the_run_in_full(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records()[:2])
    _fake_renderer(monkeypatch)
    assert cli.main(["report", results, "--output", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert sorted(document) == ["fleet", "generated", "hosts", "run", "schema"]
    assert document["schema"] == "gpufleet.results/v1"
    assert document["run"]["run_id"] == "run" and document["run"]["hosts"] == ["gpu-03", "gpu-01"]
    assert list(document["hosts"]) == ["gpu-01", "gpu-03"]
    assert document["hosts"]["gpu-03"]["failed"] == ["gpu.ecc"]
    # every host record whole, as hosts/<host>.json holds it (results.json, v2, leaves the facts to the records)
    assert all({"facts", "raw", "checks"} <= set(record) for record in document["hosts"].values())


def test_report_output_table_stays_the_default(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    _fake_renderer(monkeypatch)
    assert cli.main(["report", results, "--output", "table"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NODE ")
    assert "fleet REJECT: 2 of 5 nodes acceptable; 1 ACCEPT, 1 ACCEPT WITH WARNINGS, 2 REJECT, 1 UNREACHABLE\n" in out


def test_parse_query_selects_from_the_parsed_output(capsys):
    code = cli.main(["parse", "ibdev2netdev", IBDEV2NETDEV, "--query", "mappings[?state=='Up'].netdev"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert json.loads(out) == ["enp1s0f1np1", "enP2p1s0f1np1"]


def test_parse_query_with_compact_and_a_scalar_result(capsys):
    code = cli.main(["parse", "--compact", "ibdev2netdev", IBDEV2NETDEV, "--query", "length(mappings[?state=='Down'])"])
    assert code == 0
    assert capsys.readouterr().out == "2\n"


def test_a_bad_expression_exits_1_with_one_line_naming_it_before_reading_anything(tmp_path, capsys):
    # the file does not exist: the expression is refused first (a missing file would be exit 2)
    code = cli.main(["parse", "ibdev2netdev", str(tmp_path / "none.txt"), "--query", "mappings[?state=="])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == ("gpufleet parse: --query 'mappings[?state==' is not a valid JMESPath expression: "
                   "incomplete expression\n")


def test_a_bad_expression_names_the_column(capsys):
    assert cli.main(["parse", "ibdev2netdev", IBDEV2NETDEV, "--query", "mappings..netdev"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("gpufleet parse: --query 'mappings..netdev' is not a valid JMESPath expression: ")
    assert err.endswith(" at column 9 (token '.')\n")  # the second dot


def test_a_query_failing_on_the_document_exits_1_with_one_line(capsys):
    assert cli.main(["parse", "ibdev2netdev", IBDEV2NETDEV, "--query", "abs(mappings)"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("gpufleet parse: --query 'abs(mappings)' failed: In function abs(), invalid type for value")
    assert err.count("\n") == 1


def test_report_refuses_a_bad_expression_before_rendering(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    calls = []
    _fake_renderer(monkeypatch, calls)
    assert cli.main(["report", results, "--query", "values(hosts"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and calls == []
    assert err == "gpufleet report: --query 'values(hosts' is not a valid JMESPath expression: incomplete expression\n"


def test_query_with_output_table_is_refused(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    _fake_renderer(monkeypatch)
    assert cli.main(["report", results, "--output", "table", "--query", REJECTED]) == 1
    assert capsys.readouterr().err == ("gpufleet report: --query 'values(hosts)[?verdict=='REJECT'].host' "
                                       "selects from JSON: it needs --output json, not --output table\n")


def test_validate_refuses_a_bad_expression_before_running_anything(tmp_path, capsys):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    gpu-01:\n", encoding="utf-8")
    assert cli.main(["validate", "-i", str(inventory), "--out", str(tmp_path / "r"), "--query", "hosts[?"]) == 1
    assert capsys.readouterr().err == ("gpufleet validate: --query 'hosts[?' is not a valid JMESPath expression: "
                                       "incomplete expression\n")
    assert not os.path.exists(tmp_path / "r")


def test_validate_summary_in_json_mode_keeps_stdout_for_the_json(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    run, fleet, hosts = common.load_run(results)
    verdicts = common.node_verdicts(run, fleet, hosts)
    monkeypatch.setattr(validate, "render_report", lambda results_dir: (os.path.join(results_dir, "report.html"), None))
    output = common.JsonOutput(query=REJECTED)
    code = validate.report_and_summary(results, verdicts, hosts, rerender=True, output=output,
                                       document=common.run_json(run, fleet, hosts))
    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out) == ["gpu-02", "gpu-03"]
    retest = "gpufleet validate -i INVENTORY --retest-failed %s --out NEW_DIR" % results
    # each node not accepted, failing first (by name among equals), with its next step (gpufleet/report/next_steps.py)
    assert err.splitlines() == [
        "fleet REJECT: 2 of 5 nodes acceptable; 1 ACCEPT, 1 ACCEPT WITH WARNINGS, 2 REJECT, 1 UNREACHABLE",
        "next: gpu-02: dispute it with its evidence: gpufleet bundle %s gpu-02; after the seller's fix: %s"
        % (results, retest),
        "next: gpu-03: dispute it with its evidence: gpufleet bundle %s gpu-03; after the seller's fix: %s"
        % (results, retest),
        "next: gpu-04: make it reachable over ssh from the controller (see its reason), then: %s" % retest,
        "results: %s" % results,
        "report: %s" % os.path.join(results, "report.html"),
    ]

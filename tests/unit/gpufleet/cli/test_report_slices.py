"""`gpufleet report SLICE1 SLICE2 --out MERGED`: the slices of a sliced run (AWX job slicing) in one report
(gpufleet/results/merge.py). The results directories are hand-built (cli_results.py, SYNTHETIC)."""

from __future__ import annotations

import importlib.util
import json
import os

from gpufleet.cli import main as cli

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run


def _slices(tmp_path):
    seven = check("gpu.count", "fail", message="7 GPUs")
    first = write_run(tmp_path / "slice-0", [host_record("n1", "ACCEPT", [check("gpu.count", "pass")]),
                                             host_record("n2", "REJECT", [seven])], run_id="s0")
    second = write_run(tmp_path / "slice-1", [host_record("n3", "ACCEPT", [check("gpu.count", "pass")])], run_id="s1")
    return first, second


def test_the_slices_merge_into_one_report_keeping_each_nodes_verdict(tmp_path, capsys):
    first, second = _slices(tmp_path)
    merged = tmp_path / "merged"
    assert cli.main(["report", first, second, "--out", str(merged)]) == 0
    captured = capsys.readouterr()
    assert "2 slices merged into %s" % merged in captured.err
    assert "fleet REJECT: 2 of 3 nodes acceptable; 2 ACCEPT, 1 REJECT" in captured.out
    with open(merged / "fleet.json", encoding="utf-8") as handle:
        fleet = json.load(handle)
    assert {host: entry["verdict"] for host, entry in fleet["node_verdicts"].items()} == {
        "n1": "ACCEPT", "n2": "REJECT", "n3": "ACCEPT"}
    assert (fleet["verdict"], fleet["run_id"]) == ("REJECT", "merged-s0+s1")
    assert [item["run_id"] for item in fleet["slices"]] == ["s0", "s1"]
    assert sorted(os.listdir(merged / "hosts")) == ["n1.json", "n2.json", "n3.json"]
    assert (merged / "report.html").exists()
    # the slices themselves are left as they were
    assert not os.path.exists(os.path.join(first, "report.html"))


def test_a_node_in_two_slices_or_no_out_is_refused(tmp_path, capsys):
    first, _second = _slices(tmp_path)
    again = write_run(tmp_path / "slice-2", [host_record("n2", "ACCEPT", [check("gpu.count", "pass")])], run_id="s2")
    assert cli.main(["report", first, again, "--out", str(tmp_path / "m")]) == 64
    assert "n2 is in two slices (%s and %s): one verdict per node" % (first, again) in capsys.readouterr().err
    assert cli.main(["report", first, again]) == 64
    assert "name the merged one with --out DIR" in capsys.readouterr().err

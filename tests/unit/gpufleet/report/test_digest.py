# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/digest.py: the report read in one pass over the host records is the report of the whole records.

The runs are conftest.py's hand-built ones; ``views_run`` gives every fleet-wide view something to read."""

from __future__ import annotations

import os

import pytest

from gpufleet.report import digest as digest_module
from gpufleet.report import render
from gpufleet.report.digest import SuiteSpool, digest_run, shares_of, view_record
from gpufleet.report.junit import junit_document, render_junit
from gpufleet.report.model import ReportError, build_model, load_results, load_run, results_document
from gpufleet.report.render import render_report
from gpufleet.results.store import RunDir

FORMATS = ("json", "junit")


def whole(path):
    """model, results.json document and junit.xml of the whole records."""
    results = load_results(path)
    model = build_model(results)
    return model, results_document(results, generated="now", model=model), render_junit(results)


def digested(path, tmp_path):
    """The same from the one pass."""
    results = load_run(path)
    digest = digest_run(results, FORMATS, str(tmp_path))
    try:
        model = build_model(results, rows=digest.rows)
        document = results_document(results, generated="now", model=model,
                                    compacted=digest.compacted())
        junit = b"".join(junit_document(results, digest.spool.totals(), digest.spool.suites()))
    finally:
        digest.close()
    return model, document, junit


@pytest.mark.parametrize("fixture", ["small_run", "hostile_run", "multi_run", "views_run"])
def test_the_one_pass_gives_the_report_of_the_whole_records(fixture, request, tmp_path):
    path = request.getfixturevalue(fixture)
    model, document, junit = digested(path, tmp_path)
    assert (model, document, junit) == whole(path)


def test_every_view_had_something_to_read(views_run, tmp_path):
    """views_run is worth comparing: each view the cut-down records feed has rows from them."""
    model = digested(views_run, tmp_path)[0]
    # the priced nodes not accepted, failing first (foxtrot, accepted with warnings, is an offer)
    assert [row["host"] for row in model["cost"]["not_offers"]] == ["bravo", "golf", "delta", "echo"]
    reasons = {row["host"]: row["reason"] for row in model["cost"]["not_offers"]}
    assert reasons["echo"] == "not verified: benchmarks.allreduce_single: not run"
    assert reasons["golf"] == "Xid 79"
    assert [(row["host"], row["gpu"], row["outlier"]) for row in model["throughput"]["rows"]] == [
        ("foxtrot", 0, False), ("foxtrot", 1, True)]
    assert [node["host"] for node in model["burn_in"]["nodes"]] == ["foxtrot"]
    assert model["benchmarks"]["single"]["sources"] == ["claim"]
    assert len(model["topology_groups"]) == 2


def test_a_record_is_cut_down_to_what_the_views_read():
    record = {
        "host": "n1", "verdict": "REJECT", "claim": {"price_per_node_hour": 9.5}, "benchmarks": [{"name": "b"}],
        "facts": {"gpu": {"gpus": [{"index": 0, "name": "H100", "serial": "S1", "uuid": "GPU-x", "memory_total_mib": 80,
                                    "pcie_link_gen_max": 5, "clock_event_reasons": {"idle": True}}, "no mapping"],
                          "driver_version": "550.54", "gpu_count": 1, "cuda_version": "12.4", "warnings": ["w"]},
                  "topology": {"names": ["GPU0"], "links": {"GPU0": {"GPU0": "X"}}, "summary": {"gpu_count": 1},
                               "legend": "long", "gpu_pairs": []},
                  "nic": {"interfaces": [{"name": "ib0"}]}, "host": {"kernel": "6.8"}},
        "checks": [{"id": "gpu.count", "status": "pass"}, {"id": "host.xid", "status": "fail"},
                   {"id": "nvlink.state", "status": "warn"},
                   {"id": "benchmark.allreduce_single_node", "status": "pass"},
                   {"id": "benchmarks.gpu_compute.fleet", "status": "warn"}, {"id": "burn_in.clocks", "status": "pass"},
                   {"id": "host.dmesg", "status": "error"}, 7],
        "coverage": {"incomplete": ["a"], "items": [{"item": "a"}], "label": "static checks only"},
    }
    assert view_record(record) == {
        "host": "n1", "verdict": "REJECT", "claim": {"price_per_node_hour": 9.5}, "benchmarks": [{"name": "b"}],
        "facts": {"gpu": {"gpus": [{"index": 0, "name": "H100", "serial": "S1", "memory_total_mib": 80,
                                    "pcie_link_gen_max": 5}, "no mapping"],
                          "driver_version": "550.54", "gpu_count": 1},
                  "topology": {"names": ["GPU0"], "links": {"GPU0": {"GPU0": "X"}}, "summary": {"gpu_count": 1}}},
        "checks": [{"id": "host.xid", "status": "fail"}, {"id": "benchmark.allreduce_single_node", "status": "pass"},
                   {"id": "benchmarks.gpu_compute.fleet", "status": "warn"}, {"id": "burn_in.clocks", "status": "pass"},
                   {"id": "host.dmesg", "status": "error"}, 7],
        "coverage": {"incomplete": ["a"]},
    }


def test_wrong_shapes_are_kept_as_they_are():
    """The views find a broken record as it was (and name it on the node's row): the cut never raises."""
    record = {"host": "n2", "facts": ["not", "a", "mapping"], "checks": "not a list", "coverage": None}
    assert view_record(record) == record
    record = {"host": "n3", "facts": {"gpu": {"gpus": "none"}, "topology": 5}}
    assert view_record(record) == record


def test_a_host_read_twice_keeps_its_last_testsuite(tmp_path):
    spool = SuiteSpool(str(tmp_path), parts=2)
    try:
        spool.add(0, "b", b"<b1/>", {"tests": 2, "failures": 1, "errors": 0, "skipped": 0}, spool.where)
        spool.add(1, "a", b"<a/>", {"tests": 1, "failures": 0, "errors": 0, "skipped": 1}, spool.where)
        spool.add(1, "b", b"<b2/>", {"tests": 3, "failures": 0, "errors": 1, "skipped": 0}, spool.where)
        assert list(spool.suites()) == [b"<a/>", b"<b2/>"]
        assert spool.totals() == {"tests": 4, "failures": 0, "errors": 1, "skipped": 1}
    finally:
        spool.close()
    # the spool is an unnamed file: nothing is left in the output directory
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("broken, name", [("compact_host", "results.json"), ("host_suite", "junit.xml")])
def test_a_file_the_pass_cannot_make_costs_no_other(small_run, tmp_path, monkeypatch, broken, name):
    def fails(*_args):
        raise ValueError("no space left for %s" % broken)

    monkeypatch.setattr("gpufleet.report.digest.%s" % broken, fails)
    out = tmp_path / "out"
    with pytest.raises(ReportError) as raised:
        render_report(small_run, output_dir=str(out))
    assert str(raised.value).startswith("not written: %s: ValueError: no space left for %s; written: " % (name, broken))
    assert sorted(os.listdir(str(out))) == sorted(set(render.FILE_NAMES.values()) - {name})


@pytest.mark.parametrize("files, cpus, sizes", [
    (999, 4, [999]),                    # under SHARED_PASS_NODES: one reader
    (1000, 2, [524, 476]),              # the first (read here) 1.1 times the other: 1000 x 1.1 / 2.1 = 523.8
    (1000, 1, [1000]),                  # no second CPU
    (1500, 4, [532, 484, 484]),         # 3 shares (about 500 files each at least): 1500 x 1.1 / 3.1 = 532.3
    (10000, 16, [1358] + [1235] * 6 + [1232]),  # MAX_SHARES: 10000 x 1.1 / 8.1 = 1358.0, then 8642 in 7
    (10001, 2, [5239, 4762]),           # 10001 x 1.1 / 2.1 = 5238.6
])
def test_the_files_are_cut_in_runs_in_a_row(files, cpus, sizes):
    names = ["h%05d.json" % number for number in range(files)]
    shares = shares_of(names, cpus)
    assert [len(share) for share in shares] == sizes
    assert [name for share in shares for name in share] == names


@pytest.fixture(name="shared")
def shared_fixture(monkeypatch):
    """The pass shared by 3 readers on runs of a few hosts (a share of a file at least), whatever the machine's CPUs."""
    monkeypatch.setattr(digest_module, "SHARED_PASS_NODES", 2)
    monkeypatch.setattr(digest_module, "usable_cpus", lambda: 3)
    monkeypatch.setattr(digest_module, "can_fork", lambda: True)


@pytest.mark.parametrize("fixture", ["hostile_run", "views_run"])
def test_the_pass_shared_among_processes_gives_the_same_report(fixture, request, tmp_path, shared):
    path = request.getfixturevalue(fixture)
    assert len(shares_of(RunDir.open(path).host_files(), 3)) == 3
    assert digested(path, tmp_path) == whole(path)


def test_a_share_whose_process_dies_is_read_here_again(views_run, tmp_path, shared, monkeypatch):
    here = os.getpid()
    read = digest_module._Reader.read  # pylint: disable=protected-access

    def dies_in_a_copy(self, part, files, *each_run):
        if os.getpid() != here:
            os._exit(9)  # pylint: disable=protected-access
        return read(self, part, files, *each_run)

    monkeypatch.setattr(digest_module._Reader, "read", dies_in_a_copy)  # pylint: disable=protected-access
    assert digested(views_run, tmp_path) == whole(views_run)


def test_a_copy_sends_its_rows_a_run_at_a_time_and_what_a_dead_one_sent_is_let_go(
        views_run, tmp_path, shared, monkeypatch):
    """A run of one record: each copy's rows and views come in a frame per record, taken in as this process reads its
    own. A copy that ends after its first frame has its whole share read here again, that frame left out: the report
    is the same, each host once."""
    monkeypatch.setattr(digest_module, "FRAME_RECORDS", 1)
    (tmp_path / "sent").mkdir()
    (tmp_path / "died").mkdir()
    assert digested(views_run, tmp_path / "sent") == whole(views_run)
    here, sent = os.getpid(), []
    send = digest_module._send_run  # pylint: disable=protected-access

    def dies_after_one(frames, share):
        send(frames, share)
        sent.append(1)
        if os.getpid() != here and len(sent) > 1:
            os._exit(9)  # pylint: disable=protected-access

    monkeypatch.setattr(digest_module, "_send_run", dies_after_one)
    assert digested(views_run, tmp_path / "died") == whole(views_run)


def test_shares_are_read_here_when_there_is_no_file_to_send_them_through(views_run, tmp_path, shared, monkeypatch):
    def no_space(_directory):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(digest_module, "Frames", no_space)
    assert digested(views_run, tmp_path) == whole(views_run)

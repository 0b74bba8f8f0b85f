# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SQLite health history: schema, append, series per GPU, drift flags, concurrent writers (temp databases).

Rows are SYNTHETIC per-GPU summaries written here by hand; expected drift follows from them.
"""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from gpufleet.history import store as history


def row(host, uuid, index, clock, kind="burn_in", **counters):
    out = {"host": host, "uuid": uuid, "gpu_index": index, "name": "NVIDIA H100 80GB HBM3", "kind": kind, "load_tool": "gpu-burn",
           "samples": 10, "lost": 0, "temp_mean_c": 60.0, "temp_min_c": 55, "temp_max_c": 66, "temp_p95_c": 65, "sm_clock_median_mhz": clock,
           "power_mean_w": 650.0}
    for name, _key in history.COUNTER_COLUMNS:
        out[name] = counters.get(name, 0)
    return out


def test_a_new_store_has_its_schema_version(tmp_path):
    store = history.HistoryStore(str(tmp_path / "sub" / "health.sqlite"))
    assert store.schema_version() == history.SCHEMA_VERSION == 1
    tables = {item[0] for item in sqlite3.connect(store.path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"meta", "runs", "gpu_runs"} <= tables


def test_a_newer_schema_is_refused(tmp_path):
    store = history.HistoryStore(str(tmp_path / "h.sqlite"))
    connection = sqlite3.connect(store.path)
    connection.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    connection.commit()
    connection.close()
    with pytest.raises(history.HistoryError, match="history schema version 2, this gpufleet reads up to 1"):
        history.HistoryStore(store.path)


def test_series_per_gpu_over_runs_oldest_first(tmp_path):
    store = history.HistoryStore(str(tmp_path / "h.sqlite"))
    # appended out of order: the series follows the runs' start times
    store.append_run("r2", "2026-01-08T00:00:00Z", [row("a", "GPU-0", 0, 1970), row("a", "GPU-1", 1, 1980)])
    store.append_run("r1", "2026-01-01T00:00:00Z", [row("a", "GPU-0", 0, 1980), row("a", "GPU-1", 1, 1980)])
    store.append_run("r3", "2026-01-15T00:00:00Z", [row("a", "GPU-0", 0, 1960), row("b", "GPU-9", 0, 1400)])
    series = store.series(host="a")
    assert sorted(series) == [("a", "GPU-0"), ("a", "GPU-1")]
    assert [(item["run_id"], item["sm_clock_median_mhz"]) for item in series[("a", "GPU-0")]] == [("r1", 1980), ("r2", 1970), ("r3", 1960)]
    assert [item["run_id"] for item in series[("a", "GPU-1")]] == ["r1", "r2"]
    assert [item["run_id"] for item in store.series(uuid="GPU-0", until_run="r2")[("a", "GPU-0")]] == ["r1", "r2"]
    # a rerun of r3 replaces host a's rows of r3 and keeps host b's
    store.append_run("r3", "2026-01-15T00:00:00Z", [row("a", "GPU-0", 0, 1950)])
    assert [item["sm_clock_median_mhz"] for item in store.series(host="a")[("a", "GPU-0")]] == [1980, 1970, 1950]
    assert ("b", "GPU-9") in store.series()


def test_drift_clock_falling_against_the_median_of_previous_runs(tmp_path):
    store = history.HistoryStore(str(tmp_path / "h.sqlite"))
    store.append_run("r1", "2026-01-01T00:00:00Z", [row("a", "GPU-0", 0, 1980), row("a", "GPU-1", 1, 1980)])
    store.append_run("r2", "2026-01-08T00:00:00Z", [row("a", "GPU-0", 0, 1960), row("a", "GPU-1", 1, 1700)])
    # r3: GPU-0 1870 < 0.95 x median(1980, 1960) = 0.95 x 1970 = 1871.5 -> drift; GPU-1 1880 vs median(1980, 1700) = 1840: none
    store.append_run("r3", "2026-01-15T00:00:00Z", [row("a", "GPU-0", 0, 1870), row("a", "GPU-1", 1, 1880)])
    flags = store.drift("r3")
    assert [(flag["uuid"], flag["metric"], flag["status"]) for flag in flags] == [("GPU-0", "sm_clock", "warn")]
    assert flags[0]["measured"] == 1870 and flags[0]["expected"] == 1871.5
    assert "SM clock median 1870 MHz in this burn-in, 5.1% below the median 1970 MHz of its 2 previous run(s)" in flags[0]["message"]
    # the first run has nothing to drift from; r2's GPU-1 1700 < 0.95 x 1980 = 1881 does
    assert store.drift("r1") == []
    assert [(flag["uuid"], flag["metric"]) for flag in store.drift("r2")] == [("GPU-1", "sm_clock")]
    # a stricter minimum of previous runs: r2 has only one before it
    assert store.drift("r2", min_previous=2) == []


def test_drift_only_between_runs_of_the_same_kind(tmp_path):
    store = history.HistoryStore(str(tmp_path / "h.sqlite"))
    store.append_run("r1", "2026-01-01T00:00:00Z", [row("a", "GPU-0", 0, 1980, kind="burn_in")])
    store.append_run("r2", "2026-01-08T00:00:00Z", [row("a", "GPU-0", 0, 345, kind="health_check")])   # idle clock
    assert store.drift("r2") == []


def test_drift_counters_that_grow_between_runs_with_resets(tmp_path):
    store = history.HistoryStore(str(tmp_path / "h.sqlite"))
    store.append_run("r1", "2026-01-01T00:00:00Z", [
        row("a", "GPU-0", 0, 1980, ecc_aggregate_uncorrected=2, ecc_aggregate_corrected=10, nvlink_replay=7),
        row("a", "GPU-1", 1, 1980, ecc_aggregate_uncorrected=None, ecc_volatile_uncorrected=4, nvlink_crc_flit=50)])
    store.append_run("r2", "2026-01-08T00:00:00Z", [
        # GPU-0: aggregate uncorrected 2 -> 3 (+1: fail), corrected 10 -> 10, replay 7 -> 2 (reset: +2, warn)
        row("a", "GPU-0", 0, 1980, ecc_aggregate_uncorrected=3, ecc_aggregate_corrected=10, nvlink_replay=2),
        # GPU-1: no aggregate, volatile uncorrected 4 -> 0 (a reload, nothing new: +0), crc_flit 50 -> 50
        row("a", "GPU-1", 1, 1980, ecc_aggregate_uncorrected=None, ecc_volatile_uncorrected=0, nvlink_crc_flit=50)])
    flags = store.drift("r2")
    assert [(flag["uuid"], flag["metric"], flag["status"], flag["measured"]) for flag in flags] == [
        ("GPU-0", "ecc_aggregate_uncorrected", "fail", 1), ("GPU-0", "nvlink_replay", "warn", 2)]


def test_rows_from_a_burn_in_record():
    record = {"kind": "burn_in", "load": {"tool": "dcgmi", "outcome": "ok"}, "gpus": [
        {"index": 0, "uuid": "GPU-0", "name": "H100", "samples": 3, "lost": False, "temp_mean_c": 61.0, "temp_min_c": 60, "temp_max_c": 62,
         "temp_p95_c": 62, "sm_clock_median_mhz": 1980, "power_mean_w": 640.5, "counters_end": {"ecc.volatile_corrected": 1, "nvlink.replay": None}},
        {"index": 1, "uuid": None, "samples": 0, "lost": True, "counters_end": {}}]}
    rows = history.rows_from_record("node-a", record)
    assert rows[0]["uuid"] == "GPU-0" and rows[0]["load_tool"] == "dcgmi" and rows[0]["ecc_volatile_corrected"] == 1 and rows[0]["nvlink_replay"] is None
    assert rows[1]["uuid"] == "index:1" and rows[1]["lost"] == 1 and rows[1]["temp_p95_c"] is None


def _writer(path, prefix, count, hosts):
    store = history.HistoryStore(path, timeout=30)
    for number in range(count):
        store.append_run("%s-%03d" % (prefix, number), "2026-01-01T00:00:%02dZ" % (number % 60),
                         [row(host, "GPU-%d" % gpu, gpu, 1980) for host in hosts for gpu in range(8)])


def test_two_writers_at_once_lose_nothing(tmp_path):
    """Two processes append 25 runs of 2 hosts x 8 GPUs each at the same time: 50 runs, 800 rows, integrity ok (~2-4 s)."""
    path = str(tmp_path / "h.sqlite")
    history.HistoryStore(path)
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_writer, args=(path, prefix, 25, ["%s-node-%d" % (prefix, i) for i in range(2)])) for prefix in ("x", "y")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [writer.exitcode for writer in writers] == [0, 0]
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 50
    assert connection.execute("SELECT COUNT(*) FROM gpu_runs").fetchone()[0] == 800
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_history_document_keeps_the_same_kind_and_the_last_points(tmp_path):
    store = history.HistoryStore(str(tmp_path / "h.sqlite"))
    for number, clock in enumerate((1980, 1970, 1960, 1950)):
        store.append_run("r%d" % number, "2026-01-0%dT00:00:00Z" % (number + 1), [row("a", "GPU-0", 0, clock)])
    store.append_run("h1", "2026-01-09T00:00:00Z", [row("a", "GPU-0", 0, 345, kind="health_check")])
    document = history.history_document(store, "r3", max_points=3, flags=[{"x": 1}])
    gpu, = document["series"]["a"]
    assert [(point["run_id"], point["sm_clock_median_mhz"]) for point in gpu["points"]] == [("r1", 1970), ("r2", 1960), ("r3", 1950)]
    assert document["runs"] == 3 and document["flags"] == [{"x": 1}] and document["db"] == store.path

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results.json v2 (gpufleet/results/compact.py): each value once in ``values``, checks and coverage items as rows.

The records here are SYNTHETIC, written by hand in the shapes of hosts/<host>.json; the expected tables and rows are
worked out by hand from them.
"""

from __future__ import annotations

import json

import pytest

from gpufleet.results import compact
from gpufleet.results.compact import (DOCUMENT_SCHEMA, ROW_FIELDS, ValueTable, compact_host, compact_hosts, decode_row,
                                      document_fields, encode_row, expand_document, remap_host)

CHECK_FIELDS = ROW_FIELDS["check"]
BENCH = {"name": "all_reduce_perf", "command": ["all_reduce_perf", "-b", "8"], "environment": {},
         "message_size_bytes": 8, "algorithm": None, "raw_output_path": "raw/a/benchmarks/all_reduce_perf.txt",
         "parsed": {"rows": [{"size": 8, "busbw": 0.01}]}, "started": "2026-01-31T12:00:00Z", "duration_s": 1.5}


def _check(check_id, status, message, measured=None, expected=None, source=None, subject=None):
    return {"id": check_id, "status": status, "subject": subject, "measured": measured, "expected": expected,
            "threshold_source": source, "message": message}


def _record(host, checks, **extra):
    record = {"schema": "gpufleet.results/v1", "host": host, "unreachable": None,
              "phases": {"facts": {"complete": True, "finished": "2026-01-31T12:00:00Z"}},
              "facts": {"gpu": {"gpu_count": 8}, "topology": None, "nic": None, "host": None}, "fact_errors": {},
              "raw": {"gpu": {"smi": {"path": "raw/%s/gpu/smi.txt" % host, "stderr_path": None, "cmd": ["nvidia-smi"],
                                      "rc": 0, "duration_s": 0.4, "error": None}}},
              "claim": {"gpu_count": 8}, "checks": checks, "failed": [], "verdict": "ACCEPT", "benchmarks": []}
    record.update(extra)
    return record


def test_a_value_is_kept_once_and_values_of_other_types_apart():
    table = ValueTable()
    values = (1, 1.0, True, "1", None, "1", {"a": 1, "b": [2]}, {"a": 1, "b": [2]}, [1], [1.0], ["1"], [1])
    assert [table.ref(value) for value in values] == [0, 1, 2, 3, 4, 3, 5, 5, 6, 7, 8, 6]
    assert table.values == [1, 1.0, True, "1", None, {"a": 1, "b": [2]}, [1], [1.0], ["1"]]
    assert [type(value) for value in table.values[:3]] == [int, float, bool]
    assert [type(value[0]) for value in table.values[6:]] == [int, float, str]
    # 0.0 and -0.0 are equal in Python, not in what was measured
    assert [table.ref(0.0), table.ref(-0.0), table.ref(0.0)] == [9, 10, 9] and str(table.values[10]) == "-0.0"
    # the same object with its keys in another order may be kept again: bytes, never a wrong value
    again = table.ref({"b": [2], "a": 1})
    assert table.values[again] == {"a": 1, "b": [2]}


def test_a_check_is_a_row_of_indexes_in_the_order_of_its_fields():
    table = ValueTable()
    count = _check("gpu.count", "pass", "8 GPUs", 8, 8, "claim")
    assert encode_row(count, CHECK_FIELDS, table) == [0, 1, 2, 3, 3, 4, 5]
    assert table.values == ["gpu.count", "pass", None, 8, "claim", "8 GPUs"]
    # a second node's same check adds nothing; another check reuses what it shares
    assert encode_row(dict(count), CHECK_FIELDS, table) == [0, 1, 2, 3, 3, 4, 5]
    ecc = _check("gpu.ecc", "pass", "no ECC errors", 0, 0, "claim")
    assert encode_row(ecc, CHECK_FIELDS, table) == [6, 1, 2, 7, 7, 4, 8]
    assert len(table.values) == 9


def test_an_absent_key_an_extra_key_and_an_entry_that_is_no_object():
    table = ValueTable()
    partial = {"id": "x", "status": "skip", "message": "not judged", "gpu": {"index": 0, "uuid": "GPU-1"}}
    row = encode_row(partial, CHECK_FIELDS, table)
    # id, status, then subject..threshold_source absent (null, not the index of null), message, then the extras
    assert row == [0, 1, None, None, None, None, 2, 3]
    assert table.values == ["x", "skip", "not judged", {"gpu": {"index": 0, "uuid": "GPU-1"}}]
    assert decode_row(row, CHECK_FIELDS, table.values) == partial
    assert encode_row("a damaged entry", CHECK_FIELDS, table) == 4
    assert decode_row(4, CHECK_FIELDS, table.values) == "a damaged entry"
    # a key whose value is null keeps its key
    nulls = {"id": "x", "subject": None}
    assert decode_row(encode_row(nulls, CHECK_FIELDS, table), CHECK_FIELDS, table.values) == nulls


def test_a_host_without_its_readings_named_by_its_record_file():
    table = ValueTable()
    reading = {"phase": "benchmarks", "read": "2026-01-31T13:00:00Z", "before": "2026-01-31T12:00:00Z",
               "groups": ["gpu"], "facts": {"gpu": {"gpu_count": 8}}, "fact_errors": {}, "unreachable": None,
               "raw": {"gpu": {}}}
    coverage = {"claim": True, "required": 2, "judged": 1, "failed": 0, "skipped": 1,
                "incomplete": ["GPU count: not judged"], "items": [
                    {"item": "gpu.count", "label": "GPU count", "checks": ["gpu.count"], "expected": "8 GPUs",
                     "source": "claim", "subject": None, "status": "unverified", "reason": "not judged"}]}
    record = _record("rack 1/node:7", [_check("gpu.count", "skip", "not judged")], coverage=coverage,
                     health_after={"benchmarks": reading})
    host = compact_host("rack 1/node:7", record, table)
    # the readings (facts, raw index, health re-reads) stay in the record
    assert sorted(host) == ["benchmarks", "checks", "claim", "coverage", "fact_errors", "failed", "host", "phases",
                            "record", "unreachable", "verdict"]
    # the file name RunDir gives the host (store.safe_name: unsafe characters made _, 8 hex digits of its SHA-1)
    assert host["record"].startswith("hosts/rack_1_node_7-") and len(host["record"]) == len("hosts/rack_1_node_7-") + 13
    assert host["checks"] == [[0, 1, 2, 2, 2, 2, 3]]
    # "not judged" is the check's message and the item's reason: one value; the item has no fix (null)
    assert host["coverage"]["items"] == [[0, 4, 5, 2, 6, 7, 8, 3, None]]
    assert host["coverage"]["incomplete"] == [9]
    assert {key: host["coverage"][key] for key in ("claim", "required", "judged", "failed", "skipped")} == {
        "claim": True, "required": 2, "judged": 1, "failed": 0, "skipped": 1}
    assert table.values == ["gpu.count", "skip", None, "not judged", "GPU count", "unverified", "8 GPUs", "claim",
                            ["gpu.count"], "GPU count: not judged"]
    assert record["checks"][0]["status"] == "skip" and "facts" in record  # the record itself is left as it was


def test_a_damaged_record_keeps_what_it_holds():
    table = ValueTable()
    host = compact_host("a", _record("a", None, coverage="broken"), table)
    assert host["checks"] is None and host["coverage"] == "broken" and table.values == []


def test_the_document_expands_to_the_records_without_their_facts():
    records = {"b": _record("b", [_check("gpu.count", "fail", "7 GPUs, expected 8", 7, 8, "claim")], verdict="REJECT",
                            failed=["gpu.count"]),
               "a": _record("a", [_check("gpu.count", "pass", "8 GPUs, expected 8", 8, 8, "claim"),
                                  dict(_check("burn_in.clock", "warn", "GPU1 drifts", 1800, 1980), gpu={"index": 1})],
                            benchmarks=[BENCH])}
    hosts, values = compact_hosts(records)
    assert list(hosts) == ["a", "b"]
    document = {"schema": DOCUMENT_SCHEMA, "generated": None, "run": {}, "fleet": None, "fields": document_fields(),
                "values": values, "hosts": hosts}
    expanded = expand_document(json.loads(json.dumps(document)))  # as read back from the file
    assert sorted(expanded) == ["fleet", "generated", "hosts", "run", "schema"]
    for name, record in records.items():
        whole = {key: value for key, value in record.items() if key not in compact.RECORD_ONLY}
        whole["benchmarks"] = [{key: value for key, value in bench.items() if key != "parsed"}
                               for bench in record["benchmarks"]]
        assert expanded["hosts"][name] == dict(whole, record="hosts/%s.json" % name)
    # the benchmark's figures are the checks'; its parsed output stays in the record
    assert expanded["hosts"]["a"]["benchmarks"] == [{
        "name": "all_reduce_perf", "command": ["all_reduce_perf", "-b", "8"], "environment": {}, "message_size_bytes": 8,
        "algorithm": None, "raw_output_path": "raw/a/benchmarks/all_reduce_perf.txt", "started": "2026-01-31T12:00:00Z",
        "duration_s": 1.5}]
    assert records["a"]["benchmarks"][0]["parsed"] == {"rows": [{"size": 8, "busbw": 0.01}]}  # the record keeps it
    # fields are read from the document: a reader of an older order still gets each field right
    reordered = dict(document, fields={"check": list(reversed(CHECK_FIELDS)), "coverage_item": []},
                     hosts={"a": dict(hosts["a"], checks=[list(reversed(hosts["a"]["checks"][0]))])})
    assert expand_document(reordered)["hosts"]["a"]["checks"] == [records["a"]["checks"][0]]


def test_a_document_of_another_schema_is_refused():
    with pytest.raises(ValueError, match=r"not a gpufleet.results/v2 document \(schema 'gpufleet.results/v1'\)"):
        expand_document({"schema": "gpufleet.results/v1", "hosts": {}})
    with pytest.raises(ValueError, match=r"\(schema None\)"):
        expand_document([])


def test_an_entry_is_renumbered_into_another_table():
    """remap_host: every index of a host's rows (checks, coverage items, incomplete items) becomes mapping[index];
    what holds no index (nulls, other keys, a damaged list kept as it was) is left alone."""
    entry = {"host": "n1", "record": "hosts/n1.json", "verdict": "REJECT",
             "checks": [[0, 1, None, 2], 3, [0, 1, None, 2, 1]],
             "coverage": {"items": [[1, None]], "incomplete": [2, 0], "label": "static checks only"}}
    mapping = [5, 6, 7, 8]
    assert remap_host(entry, mapping) == {
        "host": "n1", "record": "hosts/n1.json", "verdict": "REJECT",
        "checks": [[5, 6, None, 7], 8, [5, 6, None, 7, 6]],
        "coverage": {"items": [[6, None]], "incomplete": [7, 5], "label": "static checks only"}}
    assert entry["checks"][0] == [0, 1, None, 2]  # the entry given is not changed
    damaged = {"host": "n2", "checks": "not a list", "coverage": {"items": {"a": 1}, "incomplete": "x"}}
    assert remap_host(damaged, mapping) == damaged

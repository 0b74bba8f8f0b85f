# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A perftest run read from its --out_json report first, from its text where there is no readable report
(gpufleet/results/bench.py parse_run): which was used, why not the report, where the two disagree, and the record.

The reports are the SYNTHETIC ones of tests/fixtures/perf/ (each holds the figures of the real text recording of
tests/fixtures/perf/ it is read beside, SOURCES.md)."""

from __future__ import annotations

import pytest

from gpufleet.checks.bench_network import bw_row
from gpufleet.results.bench import parse_nccl_run, parse_run, perftest_binary, record_run
from gpufleet.results.store import RunDir

ROCE_DOC = "perf/SYNTHETIC-ib_write_bw-out_json-25.04-from-roce-cx7-cuda-client-181gbps.json"
ROCE_TEXT = "perf/ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt"
SWEEP_DOC = "perf/SYNTHETIC-ib_write_bw-out_json-pre-24.01-syntax-from-gdr-a100-all-sizes-last-8M.json"
SWEEP_TEXT = "perf/ib_write_bw-gdr-a100-k8s-pod-all-sizes-report_gbits.txt"
LAT_DOC = "perf/SYNTHETIC-ib_read_lat-out_json-24.01-from-mlx4-fdr-client.json"
LAT_TEXT = "perf/ib_read_lat-mlx4-fdr-client-cpu-freq-warning.txt"
IPERF3_TEXT = "perf/iperf3-text-tcp-1gbe-baseline-934mbps.txt"


def test_report_first_with_what_only_the_text_has(fixture_text):
    parsed, error = parse_run("ib-bw", fixture_text(ROCE_TEXT), {"document": fixture_text(ROCE_DOC), "reason": ""})
    assert error is None
    assert (parsed["parsed_from"], parsed["json_fallback_reason"]) == ("json", None)
    assert parsed["json_text_disagreements"] == []
    assert parsed["results"] == [{"bytes": 65536, "iterations": 10384867, "bw_peak_gbps": None, "bw_avg_gbps": 181.46,
                                  "msg_rate_mpps": 0.3461}]
    assert (parsed["document_syntax"], parsed["cuda_device"], parsed["gpu_direct"]) == ("json", 0, True)
    # the CUDA lines, the warnings and the banner's settings as printed come from the text
    assert (parsed["gpu_name"], parsed["gpu_pci"]) == ("NVIDIA A40", "E1:00")
    assert "WARNING: BW peak won't be measured in this run." in parsed["warnings"]
    assert parsed["settings"]["Data ex. method"] == "rdma_cm" and parsed["line"] == 18  # the banner's line
    assert bw_row(parsed, 65536) == (parsed["results"][0], True)


def test_a_sweep_keeps_the_texts_other_sizes_and_notes_a_differing_figure(fixture_text):
    report = fixture_text(SWEEP_DOC).replace("BW_average: 80.96,", "BW_average: 79.50,")
    parsed, _error = parse_run("ib-bw", fixture_text(SWEEP_TEXT), {"document": report, "reason": ""})
    assert parsed["parsed_from"] == "json" and parsed["document_syntax"] == "relaxed"
    # 23 sizes from 2 bytes; the report (-a rewrites it at each size) holds the last, 8 MiB, and it is kept
    assert [row["bytes"] for row in parsed["results"]][:3] == [2, 4, 8] and len(parsed["results"]) == 23
    assert parsed["results"][-1] == {"bytes": 8388608, "iterations": 10000, "bw_peak_gbps": 81.02, "bw_avg_gbps": 79.5,
                                     "msg_rate_mpps": 0.001206}
    assert parsed["results"][11]["bytes"] == 4096 and parsed["results"][11]["bw_avg_gbps"] == 74.83
    assert parsed["json_text_disagreements"] == [
        {"field": "results[bytes=8388608].bw_avg_gbps", "json": 79.5, "text": 80.96}]


def test_latency_report_first(fixture_text):
    parsed, _error = parse_run("ib-lat", fixture_text(LAT_TEXT), {"document": fixture_text(LAT_DOC), "reason": ""})
    assert (parsed["parsed_from"], parsed["json_text_disagreements"]) == ("json", [])
    assert parsed["results"][0]["t_typical_us"] == 1.79 and parsed["results"][0]["p99_9_us"] == 6.12
    assert parsed["warnings"] == ["Conflicting CPU frequency values detected: 2400.000000 != 1873.463000. CPU "
                                  "Frequency is not max."]


@pytest.mark.parametrize("document, reason", [
    # cut off mid-member: line 27 is '"BW_p'
    ("CUT", "the document could not be read as perftest-json: line 27: neither JSON (Unterminated string starting at) "
            "nor a member of perftest's report"),
    ("LAT", "the document could not be read as perftest-json: the document reports RDMA_Read Latency Test (ib-lat), "
            "not an ib-bw run"),
])
def test_an_unusable_report_falls_back_to_the_text_and_says_why(fixture_text, document, reason):
    text = fixture_text(ROCE_DOC)
    report = text[:text.index('"BW_peak"') + 5] if document == "CUT" else fixture_text(LAT_DOC)
    parsed, error = parse_run("ib-bw", fixture_text(ROCE_TEXT), {"document": report, "reason": ""})
    assert error is None and (parsed["parsed_from"], parsed["json_fallback_reason"]) == ("text", reason)
    assert parsed["results"][0]["bw_avg_gbps"] == 181.46 and "document_syntax" not in parsed


@pytest.mark.parametrize("node_json, reason", [
    ({"document": None, "reason": "ib_write_bw --help lists no --out_json (perftest before 4.5-0.11)"},
     "ib_write_bw --help lists no --out_json (perftest before 4.5-0.11)"),
    (None, "no JSON document was asked for"),
])
def test_no_report_reads_the_text(fixture_text, node_json, reason):
    parsed, error = parse_run("ib-bw", fixture_text(ROCE_TEXT), node_json)
    assert error is None and (parsed["parsed_from"], parsed["json_fallback_reason"]) == ("text", reason)


def test_a_report_without_readable_text_is_still_the_record(fixture_text):
    parsed, error = parse_run("ib-bw", "", {"document": fixture_text(ROCE_DOC), "reason": ""})
    assert error is None and parsed["parsed_from"] == "json" and parsed["results"][0]["bw_avg_gbps"] == 181.46
    assert parsed["json_text_disagreements"] == [] and parsed["gpu_name"] is None


def test_kinds_without_a_document_read_their_text_as_before(fixture_text):
    parsed, error = parse_run("iperf3", fixture_text(IPERF3_TEXT), {"document": "{}", "reason": ""})
    assert error is None and "parsed_from" not in parsed
    assert parse_run(None, "anything", None) == (None, None)
    assert parse_nccl_run("", None) == (None, "no output to parse")


def test_the_record_of_a_run_read_from_its_report(tmp_path, fixture_text):
    stdout = fixture_text(ROCE_TEXT)
    parsed, _error = parse_run("ib-bw", stdout, {"document": fixture_text(ROCE_DOC), "reason": ""})
    run = RunDir.create(str(tmp_path / "run"))
    args = {"run_dir": run.path, "record_host": "node-a", "hosts": ["node-a", "node-b"], "kind": "ib_write_bw",
            "parse_kind": "ib-bw", "argv": ["ib_write_bw", "-d", "mlx5_1", "node-b"], "job_id": "bw-1",
            "group": "mlx5_1->mlx5_1"}
    command = ["ib_write_bw", "--out_json", "--out_json_file=/tmp/x/perftest.json", "-d", "mlx5_1", "node-b"]
    result = {"outcome": "ok", "reason": "", "rc": 0, "stdout": stdout, "stderr": "", "cmd": command,
              "started": "2026-01-01T00:00:00Z", "duration_s": 61.0}
    record = record_run(args, result, parsed)
    assert (record["outcome"], record["command"], record["group"]) == ("ok", command, "mlx5_1->mlx5_1")
    kept = run.host_records()["node-a"]["benchmarks"][0]["parsed"]
    assert (kept["parsed_from"], kept["results"][0]["bw_avg_gbps"]) == ("json", 181.46)


def test_perftest_binary_in_argv():
    wrapper = ["python3", "-c", "import subprocess", "30", "/usr/bin/ib_write_bw", "-d", "mlx5_0", "node-b"]
    assert perftest_binary(wrapper) == "/usr/bin/ib_write_bw"
    assert perftest_binary(["ib_read_lat", "-d", "mlx4_0"]) == "ib_read_lat"
    assert perftest_binary(["ib_write_bw-counters-grow", "-d", "mlx5_0"]) is None
    assert perftest_binary(["all_reduce_perf", "-b", "8"]) is None and perftest_binary(None) is None

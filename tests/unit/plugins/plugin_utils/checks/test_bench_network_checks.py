# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench_network checks on benchmark records built from REAL recordings (tests/fixtures/perf/).

Each record is what the bench_run action records: the recording parsed by its registry parser.
Claims, profiles and settings are scenario inputs written here; expected figures are read by hand
from the recordings named. IB counter snapshots are SYNTHETIC (no before/after pair was recorded).
"""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.checks import bench_network, engine
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.checks.model import ERROR, FAIL, PASS, REJECT, SKIP, WARN, NodeContext
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.checks.profiles import load_profiles
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.parsers.registry import parse

GBE = "perf/iperf3-text-tcp-1gbe-baseline-934mbps.txt"
TC_LIMITED = "perf/iperf3-text-tcp-tc-ratelimited-128kbit-zero-intervals-kbits.txt"
JSON_OMIT3 = "perf/iperf3-json-3.9-MULTIPLE-CONCATENATED-documents.json.txt"
ROCE_181 = "perf/ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt"
HDR_LOOPBACK = "perf/superbench-ib_write_bw-loopback-8M-HDR.txt"
READ_LAT = "perf/ib_read_lat-mlx4-fdr-client-cpu-freq-warning.txt"
NVB_D2D = "perf/nvbandwidth-readme-8gpu-d2d-write-ce-matrix.txt"
PROFILES = load_profiles()


def claim_ethernet(gbps):
    return {"nics": [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": gbps}]}


def record(kind, parsed, hosts=("a", "b"), **extra):
    rec = {"name": kind, "kind": kind, "hosts": list(hosts), "outcome": "ok", "reason": None, "parsed": parsed, "round": None, "group": None}
    rec.update(extra)
    return rec


def node(name="b", records=(), claim=None, profile=None, **settings):
    settings["benchmarks"] = list(records)
    return NodeContext(name, claim=claim, profile=profile, settings=settings)


def one(results):
    assert len(results) == 1, results
    return results[0]


# --- iperf3 alone ---------------------------------------------------------------------------


def test_1gbe_recording_passes_a_1g_claim(fixture_text):
    rec = record("iperf3", parse("iperf3", fixture_text(GBE)))
    got = one(bench_network.check_iperf3(node(records=[rec], claim=claim_ethernet(1))))
    assert got["status"] == PASS
    # intervals 1-9 (first dropped: no -O in the capture): sorted 928 928 930 930 932 935 936 936 941 -> median 932
    assert got["measured"] == 0.932
    assert got["expected"] == 0.9
    assert "9 intervals (1 warm-up dropped)" in got["message"]


def test_1gbe_recording_fails_a_10g_claim(fixture_text):
    rec = record("iperf3", parse("iperf3", fixture_text(GBE)))
    got = one(bench_network.check_iperf3(node(records=[rec], claim=claim_ethernet(10))))
    assert got["status"] == FAIL
    assert got["expected"] == 9.0
    assert "a -> b" in got["message"]


def test_tc_ratelimited_recording_fails_and_ignores_its_burst(fixture_text):
    rec = record("iperf3", parse("iperf3", fixture_text(TC_LIMITED)))
    got = one(bench_network.check_iperf3(node(records=[rec], claim=claim_ethernet(1))))
    assert got["status"] == FAIL
    # after the 3.33 Mbit/s burst of interval 0: 0, 1.04 Mbit/s, then seven zero intervals -> median 0
    assert got["measured"] == 0.0


def test_json_omitted_intervals_are_not_judged(fixture_text):
    parsed = parse("iperf3", fixture_text(JSON_OMIT3))
    rec = record("iperf3", parsed)
    # -O 3: the three omitted intervals (78.7, 147.1, 115.3 Mbit/s) are dropped, the other ten judged:
    # median (115342095 + 115345203) / 2 bit/s, min 115123710 bit/s. Line rate 0.125 -> floor 0.1125 Gb/s.
    got = one(bench_network.check_iperf3(node(records=[rec], gpufleet_iperf3_line_rate_gbps=0.125)))
    assert got["status"] == PASS, got["message"]
    assert got["measured"] == 0.115
    assert "10 intervals (3 warm-up dropped)" in got["message"]
    assert "min 0.115 Gb/s" in got["message"]  # not the omitted 0.079 (78675673 bit/s)
    stats = bench_network.interval_stats(parsed)
    assert stats["min_bps"] == 115123710.32942028 and stats["dropped"] == 3


def test_floor_fraction_setting(fixture_text):
    rec = record("iperf3", parse("iperf3", fixture_text(GBE)))
    got = one(bench_network.check_iperf3(node(records=[rec], claim=claim_ethernet(1), gpufleet_iperf3_floor_fraction=0.95)))
    assert got["status"] == FAIL  # 0.932 < 0.95
    assert got["threshold_source"].endswith("gpufleet_iperf3_floor_fraction 0.95")


def test_failed_run_is_a_failure_with_its_reason():
    rec = record("iperf3", None, outcome="hang", reason="no output within 70 s")
    got = one(bench_network.check_iperf3(node(records=[rec], claim=claim_ethernet(1))))
    assert got["status"] == FAIL
    assert "hang" in got["message"] and "no output within 70 s" in got["message"]


def test_no_line_rate_skips(fixture_text):
    rec = record("iperf3", parse("iperf3", fixture_text(GBE)))
    assert one(bench_network.check_iperf3(node(records=[rec])))["status"] == SKIP


def test_kind_from_name_and_environment(fixture_text):
    parsed = parse("iperf3", fixture_text(GBE))
    assert bench_network.record_kind({"name": "iperf3 a->b", "parsed": parsed}) == "iperf3"
    assert bench_network.record_kind({"name": "iperf3 a->b", "environment": {"GPUFLEET_IPERF3_MODE": "concurrent"}}) == "iperf3_concurrent"


# --- iperf3 concurrent ----------------------------------------------------------------------


def scaled(parsed, factor):
    """SYNTHETIC: the recording's intervals scaled (a concurrent run at a fraction of the alone rate)."""
    return dict(parsed, intervals=[dict(item, bps=item["bps"] * factor) for item in parsed["intervals"]])


def test_oversold_uplink_fails_naming_the_racks(fixture_text):
    alone = parse("iperf3", fixture_text(GBE))
    nodes = []
    for name, factor in (("b1", 0.5), ("b2", 0.45)):
        recs = [record("iperf3", alone, hosts=("a", name)),
                record("iperf3_concurrent", scaled(alone, factor), hosts=("a", name), group="A<->B")]
        nodes.append(node(name, recs))
    out = bench_network.check_iperf3_uplink(nodes)
    for name in ("b1", "b2"):
        got = one(out[name])
        assert got["status"] == FAIL
        assert "rack A and rack B" in got["message"]
        assert got["measured"] == 0.475  # median of 0.5 and 0.45


def test_one_slow_node_in_a_healthy_group_warns(fixture_text):
    alone = parse("iperf3", fixture_text(GBE))
    nodes = []
    for name, factor in (("b1", 1.0), ("b2", 0.98), ("b3", 0.5)):
        recs = [record("iperf3", alone, hosts=("a", name)),
                record("iperf3_concurrent", scaled(alone, factor), hosts=("a", name), group="A<->B")]
        nodes.append(node(name, recs))
    out = bench_network.check_iperf3_uplink(nodes)
    assert one(out["b1"])["status"] == PASS
    assert one(out["b2"])["status"] == PASS
    assert one(out["b3"])["status"] == WARN


def test_concurrent_without_alone_is_an_error(fixture_text):
    alone = parse("iperf3", fixture_text(GBE))
    out = bench_network.check_iperf3_uplink([node("b", [record("iperf3_concurrent", alone, group="A<->B")])])
    assert one(out["b"])["status"] == ERROR


# --- perftest -------------------------------------------------------------------------------

ROCE_200_FLOOR = {"name": "roce200", "thresholds": {"ib_write_bw": {
    "floor": 192.0, "warn_below": None, "message_size": None, "unit": "Gb/s",
    "source": "BASELINES.md 4: oci-hpc RoCE 200G >= 192 Gbps per port"}}}


def test_roce_181_recording_fails_a_200g_roce_floor(fixture_text):
    rec = record("ib_write_bw", parse("ib-bw", fixture_text(ROCE_181)))
    got = one(bench_network.check_ib_write_bw(node(records=[rec], profile=ROCE_200_FLOOR)))
    assert got["status"] == FAIL
    assert got["measured"] == 181.46 and got["expected"] == 192.0
    assert "GPUDirect" in got["message"]


def test_roce_181_recording_passes_the_hdr_gdr_floor_of_dgx_a100(fixture_text):
    rec = record("ib_write_bw", parse("ib-bw", fixture_text(ROCE_181)))
    got = one(bench_network.check_ib_write_bw(node(records=[rec], profile=PROFILES["dgx-a100-8"])))
    assert got["status"] == PASS  # 181.46 >= 180
    assert "largest size printed" in got["message"]  # the run used 65536 bytes, the floor names 8 MiB


def test_hdr_loopback_8m_against_a100_and_h100_floors(fixture_text):
    rec = record("ib_write_bw", parse("ib-bw", fixture_text(HDR_LOOPBACK)))
    # 24056.72 MB/s x 0.008388608 = 201.80 Gb/s at 8388608 bytes
    got = one(bench_network.check_ib_write_bw(node(records=[rec], profile=PROFILES["dgx-a100-8"])))
    assert got["status"] == PASS and got["measured"] == 201.8
    got = one(bench_network.check_ib_write_bw(node(records=[rec], profile=PROFILES["hgx-h100-8"])))
    assert got["status"] == FAIL and got["expected"] == 380.0


def test_ib_lat_limit(fixture_text):
    # the recorded ib_read_lat output stands in for ib_write_lat (same perftest latency table): t_typical 1.79 us
    rec = record("ib_write_lat", parse("ib-lat", fixture_text(READ_LAT)))
    got = one(bench_network.check_ib_write_lat(node(records=[rec])))
    assert got["status"] == PASS and got["measured"] == 1.79 and got["expected"] == 5.0
    got = one(bench_network.check_ib_write_lat(node(records=[rec], gpufleet_ib_write_lat_max_us=1.5)))
    assert got["status"] == FAIL


# --- nvbandwidth ----------------------------------------------------------------------------


def test_nvbandwidth_readme_matrix_against_p2p_floors(fixture_text):
    rec = record("nvbandwidth", parse("nvbandwidth", fixture_text(NVB_D2D)), hosts=("b",))
    got = one(bench_network.check_nvbandwidth(node(records=[rec], profile=PROFILES["dgx-a100-8"])))
    assert got["status"] == PASS  # lowest off-diagonal copy 274.89 (row 6, column 0) >= 235
    assert got["measured"] == 274.89 and "6->0" in got["message"]
    got = one(bench_network.check_nvbandwidth(node(records=[rec], profile=PROFILES["hgx-h100-8"])))
    assert got["status"] == FAIL and got["expected"] == 335.0
    assert "56 of 56 copies below 335" in got["message"]  # 8 x 8 minus the diagonal


# --- IB counters (SYNTHETIC snapshots) ------------------------------------------------------


def test_counter_growth_fails_naming_the_port():
    before = {"mlx5_0/1": {"symbol_error": 0, "port_rcv_errors": 2}, "mlx5_1/1": {"symbol_error": 0}}
    after = {"mlx5_0/1": {"symbol_error": 0, "port_rcv_errors": 2}, "mlx5_1/1": {"symbol_error": 7}}
    rec = record("ib_counters", {"benchmark": "ib_write_bw a->b", "before": before, "after": after})
    got = one(bench_network.check_ib_counters(node(records=[rec])))
    assert got["status"] == FAIL
    assert "mlx5_1/1 symbol_error 0 -> 7" in got["message"]
    assert got["subject"] == "mlx5_1/1"


def test_counters_unchanged_pass_and_saturated_fail():
    snap = {"mlx5_0/1": {"symbol_error": 0, "link_downed": 1}}
    assert one(bench_network.check_ib_counters(node(records=[record("ib_counters", {"benchmark": "x", "before": snap, "after": snap})])))["status"] == PASS
    sat = {"mlx5_0/1": {"symbol_error": 65535}}
    got = one(bench_network.check_ib_counters(node(records=[record("ib_counters", {"benchmark": "x", "before": sat, "after": sat})])))
    assert got["status"] == FAIL and "SATURATED" in got["message"]


# --- through the engine ---------------------------------------------------------------------


def test_family_through_the_engine(fixture_text):
    slow = node("slow", [record("iperf3", parse("iperf3", fixture_text(TC_LIMITED)))], claim=claim_ethernet(1))
    fine = node("fine", [record("iperf3", parse("iperf3", fixture_text(GBE)))], claim=claim_ethernet(1))
    report = engine.run_checks([slow, fine], families=["bench_network"])
    assert report["nodes"]["slow"]["verdict"] == REJECT
    assert report["nodes"]["slow"]["failed"] == ["bench_network.iperf3"]
    assert report["nodes"]["fine"]["failed"] == []

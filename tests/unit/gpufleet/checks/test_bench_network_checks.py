# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench_network checks on benchmark records built from REAL recordings (tests/fixtures/perf/).

Each record is what the bench_run action records: the recording parsed by its registry parser,
recorded under the host that ran the client, ``hosts: [client, server]``. Which recording stands
for which run of a ring is the scenario (a host whose runs all show the tc-limited recording is
the slow host); claims, profiles and settings are scenario inputs written here; expected figures
are read by hand from the recordings named. Scaled intervals and IB counter snapshots are
SYNTHETIC (marked where built).
"""

from __future__ import annotations

from gpufleet.checks import bench_network
from gpufleet.checks.benchmarks import benchmark_kind
from gpufleet.checks import engine
from gpufleet.checks.model import ERROR, FAIL, PASS, REJECT, SKIP, WARN, NodeContext
from gpufleet.checks.profiles import load_profiles
from gpufleet.parsers.registry import parse

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
    rec = {"name": kind, "kind": kind, "hosts": list(hosts), "outcome": "ok", "reason": "", "parsed": parsed, "round": None, "group": None,
           "repeat": 1}
    rec.update(extra)
    return rec


def node(name="b", records=(), claim=None, profile=None, **settings):
    settings["benchmarks"] = list(records)
    return NodeContext(name, claim=claim, profile=profile, settings=settings)


def one(results):
    assert len(results) == 1, results
    return results[0]


def ring(names, parsed_of, kind="iperf3", **extra):
    """Nodes of a directed ring h0 -> h1 -> ... -> h0; each client records its run; ``parsed_of(client, server)``."""
    out = []
    for i, name in enumerate(names):
        server = names[(i + 1) % len(names)]
        recs = [] if len(names) == 2 and i == 1 and kind is None else [record(kind, parsed_of(name, server), hosts=(name, server))]
        out.append(node(name, recs, **extra))
    return out


def by_name(nodes_out):
    return {name: [(item["status"], item["message"]) for item in items] for name, items in nodes_out.items()}


# --- iperf3 alone ---------------------------------------------------------------------------


def test_1gbe_ring_passes_a_1g_claim(fixture_text):
    gbe = parse("iperf3", fixture_text(GBE))
    out = bench_network.check_iperf3(ring(["a", "b", "c"], lambda c, s: gbe, claim=claim_ethernet(1)))
    for name in "abc":
        got = one(out[name])
        assert got["status"] == PASS, got["message"]
        # intervals 1-9 (first dropped: no -O in the capture): sorted 928 928 930 930 932 935 936 936 941 -> median 932
        assert got["measured"] == 0.932 and got["expected"] == 0.9
    assert "a->b 0.932 Gb/s" in out["a"][0]["message"] and "c->a 0.932 Gb/s" in out["a"][0]["message"]


def test_slow_host_of_a_ring_is_named_and_its_partners_are_not(fixture_text):
    gbe, slow = parse("iperf3", fixture_text(GBE)), parse("iperf3", fixture_text(TC_LIMITED))
    # ring a->b->c->d->a; c's runs (b->c, c->d) show the tc-limited recording
    out = bench_network.check_iperf3(ring(["a", "b", "c", "d"], lambda c, s: slow if "c" in (c, s) else gbe, claim=claim_ethernet(1)))
    got = one(out["c"])
    assert got["status"] == FAIL
    assert got["message"].startswith("slow host c: every iperf3 run with it misses the threshold")
    assert "b->c 0 Gb/s" in got["message"] and "c->d 0 Gb/s" in got["message"]
    assert got["measured"] == 0.0 and got["expected"] == 0.9 and got["subject"] == "c"
    for name in "abd":
        assert one(out[name])["status"] == PASS, out[name]
    assert "slow runs with c are the partner's fault" in out["b"][0]["message"]


def test_one_slow_direction_between_two_good_hosts_is_a_slow_link(fixture_text):
    gbe, slow = parse("iperf3", fixture_text(GBE)), parse("iperf3", fixture_text(TC_LIMITED))
    out = bench_network.check_iperf3(ring(["a", "b", "c", "d"], lambda c, s: slow if (c, s) == ("a", "b") else gbe, claim=claim_ethernet(1)))
    for name in "ab":
        got = one(out[name])
        assert got["status"] == FAIL and got["message"].startswith("slow link a<->b: a->b 0 Gb/s")
    for name in "cd":
        assert one(out[name])["status"] == PASS


def test_1gbe_everywhere_against_a_10g_claim_clears_nobody(fixture_text):
    gbe = parse("iperf3", fixture_text(GBE))
    out = bench_network.check_iperf3(ring(["a", "b", "c"], lambda c, s: gbe, claim=claim_ethernet(10)))
    for name in "abc":
        got = one(out[name])
        assert got["status"] == FAIL and got["expected"] == 9.0
        assert "host %s not cleared" % name in got["message"]


INTERRUPTED = "perf/iperf3-json-3.6-INTERRUPTED-caret-C-prefix-error-field.json.txt"


def test_runs_iperf3_reports_as_failed_are_not_measured_and_blame_nobody(fixture_text):
    # c rebooted during the round: its runs (b->c, c->d) are iperf3 JSON with an "error" (a real interrupted run: 0.16
    # Gb/s over its first seconds), not slow links; every other run is the 1 GbE recording
    gbe, cut = parse("iperf3", fixture_text(GBE)), parse("iperf3", fixture_text(INTERRUPTED))
    assert cut["error"] == "interrupt - the client has terminated" and cut["sent_bps"] < 0.9e9
    out = bench_network.check_iperf3(ring(["a", "b", "c", "d"], lambda c, s: cut if "c" in (c, s) else gbe,
                                          claim=claim_ethernet(1)))
    got = one(out["c"])
    assert got["status"] == SKIP and got["message"].startswith("not measured: iperf3 produced no figure with this host")
    assert "iperf3 reported: interrupt - the client has terminated" in got["message"]
    for name in "bd":
        got = one(out[name])
        assert got["status"] == WARN, got["message"]
        assert got["message"].startswith("iperf3 some pairs were not measured (no figure); the others meet the threshold")
    assert one(out["a"])["status"] == PASS
    assert not any(item["status"] == FAIL for items in out.values() for item in items)


def test_two_hosts_slow_pair_fails_both_ends(fixture_text):
    slow = parse("iperf3", fixture_text(TC_LIMITED))
    out = bench_network.check_iperf3(ring(["a", "b"], lambda c, s: slow, claim=claim_ethernet(1)))
    assert [item["status"] for item in out["a"]] == [FAIL] and [item["status"] for item in out["b"]] == [FAIL]


def scaled(parsed, factor):
    """SYNTHETIC: the recording's intervals scaled (another repeat at a fraction of the rate)."""
    return dict(parsed, intervals=[dict(item, bps=item["bps"] * factor) for item in parsed["intervals"]])


def test_repeats_vote_on_the_median_and_report_the_spread(fixture_text):
    gbe = parse("iperf3", fixture_text(GBE))
    reps = [record("iperf3", scaled(gbe, factor), hosts=("a", "b"), repeat=n) for n, factor in ((1, 1.0), (2, 0.5), (3, 0.9))]
    nodes = [node("a", reps, claim=claim_ethernet(1)), node("b", [record("iperf3", gbe, hosts=("b", "a"))], claim=claim_ethernet(1))]
    out = bench_network.check_iperf3(nodes)
    # a->b repeats: 0.932, 0.466, 0.8388 -> median 0.8388 < 0.9: the pair is slow; two hosts cannot clear each other
    assert "a->b 0.839 Gb/s (median of 3 repeats, spread 0.466-0.932)" in out["a"][0]["message"]
    assert out["a"][0]["status"] == FAIL
    best = bench_network.check_iperf3([node("a", reps, claim=claim_ethernet(1), gpufleet_benchmark_vote="best"), nodes[1]])
    assert one(best["a"])["status"] == PASS and "best of 3 repeats" in best["a"][0]["message"]


def test_json_omitted_intervals_are_not_judged(fixture_text):
    parsed = parse("iperf3", fixture_text(JSON_OMIT3))
    # -O 3: the three omitted intervals (78.7, 147.1, 115.3 Mbit/s) are dropped, the other ten judged:
    # median (115342095 + 115345203) / 2 bit/s, min 115123710 bit/s. Line rate 0.125 -> floor 0.1125 Gb/s.
    out = bench_network.check_iperf3(ring(["a", "b"], lambda c, s: parsed, gpufleet_iperf3_line_rate_gbps=0.125))
    got = one(out["a"])
    assert got["status"] == PASS, got["message"]
    assert got["measured"] == 0.115
    stats = bench_network.interval_stats(parsed)
    assert stats["min_bps"] == 115123710.32942028 and stats["dropped"] == 3 and stats["count"] == 10


def test_tc_ratelimited_recording_ignores_its_burst(fixture_text):
    # after the 3.33 Mbit/s burst of interval 0: 0, 1.04 Mbit/s, then seven zero intervals -> median 0
    assert bench_network.iperf3_gbps(parse("iperf3", fixture_text(TC_LIMITED))) == 0.0


def test_floor_fraction_setting(fixture_text):
    gbe = parse("iperf3", fixture_text(GBE))
    out = bench_network.check_iperf3(ring(["a", "b", "c"], lambda c, s: gbe, claim=claim_ethernet(1), gpufleet_iperf3_floor_fraction=0.95))
    got = one(out["a"])
    assert got["status"] == FAIL and got["expected"] == 0.95  # 0.932 < 0.95
    assert "0.95 x claim: frontend ethernet 1 Gb/s" in got["message"]
    assert got["threshold_source"].startswith("0.95 x claim: frontend ethernet 1 Gb/s; gpufleet_iperf3_floor_fraction 0.95; fault model")


def test_missing_client_binary_leaves_that_host_unverified_only(fixture_text):
    gbe = parse("iperf3", fixture_text(GBE))
    nodes = ring(["a", "b", "c", "d"], lambda c, s: gbe, claim=claim_ethernet(1))
    # c could not run iperf3 (client c->d); its server side failed too (recorded by bench_record under c)
    nodes[2].settings["benchmarks"] = [
        record("iperf3", None, hosts=("c", "d"), outcome="missing_binary", reason="iperf3: not found (or not executable) on the node"),
        record("iperf3", None, hosts=("b", "c"), name="iperf3 server", outcome="missing_binary", reason="iperf3: not found")]
    nodes[1].settings["benchmarks"] = [record("iperf3", None, hosts=("b", "c"), outcome="failed", reason="exit status 1: unable to connect")]
    out = bench_network.check_iperf3(nodes)
    statuses = {name: [item["status"] for item in items] for name, items in out.items()}
    assert statuses["a"] == [PASS] and statuses["b"] == [PASS] and statuses["d"] == [PASS], by_name(out)
    # c is not verified (the tool is missing: nothing measured, INCOMPLETE where required, not REJECT); its runs are
    # left out of the inference, so nobody is convicted by them
    assert statuses["c"] == [SKIP, SKIP]
    assert all(item["message"].startswith("not verified: ") and "did not run on c: missing_binary" in item["message"] for item in out["c"])
    assert "b->c" not in out["b"][0]["message"] and "a->b 0.932 Gb/s" in out["b"][0]["message"]


def test_skipped_and_absent():
    skipped = record("iperf3", None, hosts=("a",), outcome="skipped", reason="only one host in the play")
    out = bench_network.check_iperf3([node("a", [skipped], claim=claim_ethernet(1)), node("z")])
    assert one(out["a"])["status"] == SKIP and "only one host in the play" in out["a"][0]["message"]
    assert one(out["z"])["status"] == SKIP


def test_no_line_rate_skips(fixture_text):
    gbe = parse("iperf3", fixture_text(GBE))
    got = one(bench_network.check_iperf3(ring(["a", "b"], lambda c, s: gbe))["a"])
    assert got["status"] == SKIP and "gpufleet_iperf3_line_rate_gbps" in got["message"]


def test_kind_from_name_and_environment(fixture_text):
    parsed = parse("iperf3", fixture_text(GBE))
    assert benchmark_kind({"name": "iperf3 a->b", "parsed": parsed}) == "iperf3"
    assert benchmark_kind({"name": "iperf3 a->b", "environment": {"GPUFLEET_IPERF3_MODE": "concurrent"}}) == "iperf3_concurrent"


# --- iperf3 concurrent ----------------------------------------------------------------------


def test_oversold_uplink_fails_naming_the_racks(fixture_text):
    alone = parse("iperf3", fixture_text(GBE))
    nodes = []
    for name, factor in (("b1", 0.5), ("b2", 0.45)):
        recs = [record("iperf3", alone, hosts=(name, "a")),
                record("iperf3_concurrent", scaled(alone, factor), hosts=(name, "a"), group="A<->B")]
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
        recs = [record("iperf3", alone, hosts=(name, "a")),
                record("iperf3_concurrent", scaled(alone, factor), hosts=(name, "a"), group="A<->B")]
        nodes.append(node(name, recs))
    out = bench_network.check_iperf3_uplink(nodes)
    assert one(out["b1"])["status"] == PASS
    assert one(out["b2"])["status"] == PASS
    assert one(out["b3"])["status"] == WARN


def test_concurrent_without_alone_is_an_error_and_skips_say_why(fixture_text):
    alone = parse("iperf3", fixture_text(GBE))
    out = bench_network.check_iperf3_uplink([node("b", [record("iperf3_concurrent", alone, group="A<->B")])])
    assert one(out["b"])["status"] == ERROR
    skip = record("iperf3_concurrent", None, hosts=("b",), outcome="skipped", reason="one rack labelled: A")
    got = one(bench_network.check_iperf3_uplink([node("b", [skip])])["b"])
    assert got["status"] == SKIP and got["message"] == "concurrent iperf3 not run: one rack labelled: A"


def test_uplink_leaves_out_runs_of_a_host_found_slow(fixture_text):
    gbe, slow = parse("iperf3", fixture_text(GBE)), parse("iperf3", fixture_text(TC_LIMITED))
    alone = {"a": "b", "b": "c", "c": "d", "d": "a"}
    concurrent = {"a": "c", "b": "d", "c": "a", "d": "b"}
    nodes = []
    for name in "abcd":
        recs = [record("iperf3", slow if "c" in (name, alone[name]) else gbe, hosts=(name, alone[name])),
                record("iperf3_concurrent", slow if "c" in (name, concurrent[name]) else gbe, hosts=(name, concurrent[name]), group="A<->B")]
        nodes.append(node(name, recs, claim=claim_ethernet(1)))
    out = bench_network.check_iperf3_uplink(nodes)
    assert one(out["c"])["status"] == SKIP and "slow host c" in out["c"][0]["message"]
    assert one(out["a"])["status"] == SKIP
    for name in "bd":
        got = one(out[name])
        assert got["status"] == PASS and got["measured"] == 1.0, got["message"]


# --- perftest -------------------------------------------------------------------------------

ROCE_200_FLOOR = {"name": "roce200", "thresholds": {"ib_write_bw": {
    "floor": 192.0, "warn_below": None, "message_size": None, "unit": "Gb/s",
    "source": "docs/baselines.md 4: oci-hpc RoCE 200G >= 192 Gbps per port"}}}


def rail_ring(names, parsed, group="mlx5_1->mlx5_1", kind="ib_write_bw", **extra):
    return [node(name, [record(kind, parsed, hosts=(name, names[(i + 1) % len(names)]), group=group)], **extra) for i, name in enumerate(names)]


def test_roce_181_recording_fails_a_200g_roce_floor(fixture_text):
    parsed = parse("ib-bw", fixture_text(ROCE_181))
    out = bench_network.check_ib_write_bw(rail_ring(["a", "b", "c"], parsed, profile=ROCE_200_FLOOR))
    got = one(out["a"])
    assert got["status"] == FAIL and got["measured"] == 181.46 and got["expected"] == 192.0
    assert "rail a:mlx5_1 not cleared" in got["message"]
    assert "a:mlx5_1->b:mlx5_1 181.46 Gb/s" in got["message"] and "GPUDirect" in got["message"]


def test_roce_181_recording_passes_the_hdr_gdr_floor_of_dgx_a100(fixture_text):
    parsed = parse("ib-bw", fixture_text(ROCE_181))
    got = one(bench_network.check_ib_write_bw(rail_ring(["a", "b", "c"], parsed, profile=PROFILES["dgx-a100-8"]))["b"])
    assert got["status"] == PASS, got["message"]  # 181.46 >= 180
    assert "the largest size printed" in got["message"]  # the run used 65536 bytes, the floor names 8 MiB


def test_hdr_loopback_8m_against_a100_and_h100_floors(fixture_text):
    parsed = parse("ib-bw", fixture_text(HDR_LOOPBACK))
    # 24056.72 MB/s x 0.008388608 = 201.80 Gb/s at 8388608 bytes
    got = one(bench_network.check_ib_write_bw(rail_ring(["a", "b", "c"], parsed, profile=PROFILES["dgx-a100-8"]))["a"])
    assert got["status"] == PASS and got["measured"] == 201.8
    got = one(bench_network.check_ib_write_bw(rail_ring(["a", "b", "c"], parsed, profile=PROFILES["hgx-h100-8"]))["a"])
    assert got["status"] == FAIL and got["expected"] == 380.0


def test_slow_rail_named_by_its_hca(fixture_text):
    fast, slow = parse("ib-bw", fixture_text(HDR_LOOPBACK)), parse("ib-bw", fixture_text(ROCE_181))
    # two rails per host; b's mlx5_1 rail is slow in both of its runs (a->b and b->c on mlx5_1)
    nodes = []
    names = ["a", "b", "c"]
    for i, name in enumerate(names):
        peer = names[(i + 1) % 3]
        recs = [record("ib_write_bw", fast, hosts=(name, peer), group="mlx5_0->mlx5_0"),
                record("ib_write_bw", slow if "b" in (name, peer) else fast, hosts=(name, peer), group="mlx5_1->mlx5_1")]
        nodes.append(node(name, recs, profile=PROFILES["dgx-a100-8"], gpufleet_benchmark_vote="median"))
    nodes_profile = {"name": "x", "thresholds": {"ib_write_bw": {"floor": 190.0, "message_size": 8388608, "source": "test floor 190"}}}
    for item in nodes:
        item.profile = nodes_profile
    out = bench_network.check_ib_write_bw(nodes)
    got = one(out["b"])
    assert got["status"] == FAIL and got["subject"] == "b:mlx5_1"
    assert got["message"].startswith("slow rail b:mlx5_1: every ib_write_bw run with it misses the threshold")
    assert [item["status"] for item in out["a"]] == [PASS] and [item["status"] for item in out["c"]] == [PASS]


def test_ib_lat_limit(fixture_text):
    # the recorded ib_read_lat output stands in for ib_write_lat (same perftest latency table): t_typical 1.79 us
    parsed = parse("ib-lat", fixture_text(READ_LAT))
    got = one(bench_network.check_ib_write_lat(rail_ring(["a", "b", "c"], parsed, kind="ib_write_lat"))["a"])
    assert got["status"] == PASS and got["measured"] == 1.79 and got["expected"] == 5.0
    got = one(bench_network.check_ib_write_lat(rail_ring(["a", "b", "c"], parsed, kind="ib_write_lat", gpufleet_ib_write_lat_max_us=1.5))["a"])
    assert got["status"] == FAIL and got["expected"] == 1.5


def test_perftest_skipped_without_rails():
    skip = record("ib_write_bw", None, hosts=("a",), outcome="skipped", reason="no active RDMA rail in this host's NIC facts")
    got = one(bench_network.check_ib_write_bw([node("a", [skip])])["a"])
    assert got["status"] == SKIP and "no active RDMA rail" in got["message"]


# --- nvbandwidth ----------------------------------------------------------------------------


def test_nvbandwidth_readme_matrix_against_p2p_floors(fixture_text):
    rec = record("nvbandwidth", parse("nvbandwidth", fixture_text(NVB_D2D)), hosts=("b",))
    got = one(bench_network.check_nvbandwidth(node(records=[rec], profile=PROFILES["dgx-a100-8"])))
    assert got["status"] == PASS  # lowest off-diagonal copy 274.89 (row 6, column 0) >= 235
    assert got["measured"] == 274.89 and "6->0" in got["message"]
    got = one(bench_network.check_nvbandwidth(node(records=[rec], profile=PROFILES["hgx-h100-8"])))
    assert got["status"] == FAIL and got["expected"] == 335.0
    assert "56 of 56 copies below 335" in got["message"]  # 8 x 8 minus the diagonal


def test_nvbandwidth_repeats_vote_per_copy(fixture_text):
    parsed = parse("nvbandwidth", fixture_text(NVB_D2D))
    # SYNTHETIC second and third repeats: every copy at half and at 0.9 of the recording
    half = dict(parsed, testcases=[dict(tc, matrix={r: {c: (None if v is None else v * 0.5) for c, v in row.items()}
                                                    for r, row in tc["matrix"].items()}) for tc in parsed["testcases"]])
    most = dict(parsed, testcases=[dict(tc, matrix={r: {c: (None if v is None else v * 0.9) for c, v in row.items()}
                                                    for r, row in tc["matrix"].items()}) for tc in parsed["testcases"]])
    recs = [record("nvbandwidth", item, hosts=("b",), repeat=n) for n, item in ((1, parsed), (2, half), (3, most))]
    got = one(bench_network.check_nvbandwidth(node(records=recs, profile=PROFILES["dgx-a100-8"])))
    # 6->0: 274.89, 137.445, 247.401 -> median 247.401 >= 235
    assert got["status"] == PASS and round(got["measured"], 3) == 247.401
    assert "(median of 3 repeats, spread 137.445-274.89)" in got["message"]


def test_nvbandwidth_missing_binary_fails():
    rec = record("nvbandwidth", None, hosts=("b",), outcome="missing_binary", reason="nvbandwidth: not found (or not executable) on the node")
    got = one(bench_network.check_nvbandwidth(node(records=[rec])))
    assert got["status"] == FAIL and "missing_binary" in got["message"]


# --- IB counters (SYNTHETIC snapshots) ------------------------------------------------------


def test_counter_growth_fails_naming_the_port():
    before = {"mlx5_0/1": {"symbol_error": 0, "port_rcv_errors": 2}, "mlx5_1/1": {"symbol_error": 0}}
    after = {"mlx5_0/1": {"symbol_error": 0, "port_rcv_errors": 2}, "mlx5_1/1": {"symbol_error": 7}}
    rec = record("ib_counters", {"benchmark": "ib_write_bw", "before": before, "after": after})
    got = one(bench_network.check_ib_counters(node(records=[rec])))
    assert got["status"] == FAIL
    assert got["message"] == "error counters grew during ib_write_bw on port mlx5_1/1: mlx5_1/1 symbol_error 0 -> 7"
    assert got["subject"] == "mlx5_1/1" and got["measured"] == 7


def test_counters_unchanged_pass_saturated_and_hw_growth_warn():
    snap = {"mlx5_0/1": {"symbol_error": 0, "link_downed": 1}}
    rec = record("ib_counters", {"benchmark": "x", "before": snap, "after": snap})
    assert one(bench_network.check_ib_counters(node(records=[rec])))["status"] == PASS
    sat = {"mlx5_0/1": {"symbol_error": 65535}}
    got = bench_network.check_ib_counters(node(records=[record("ib_counters", {"benchmark": "x", "before": sat, "after": sat})]))
    assert [item["status"] for item in got] == [WARN, PASS] and "mlx5_0/1 symbol_error saturated" in got[0]["message"]
    hw = record("ib_counters", {"benchmark": "iperf3", "before": snap, "after": snap, "hw_before": {"mlx5_0/1": {"out_of_sequence": 3, "lifespan": 12}},
                                "hw_after": {"mlx5_0/1": {"out_of_sequence": 9, "lifespan": 99}}})
    got = bench_network.check_ib_counters(node(records=[hw]))
    assert [item["status"] for item in got] == [WARN, PASS]
    assert got[0]["message"] == "transport error hw_counters grew during iperf3 on port mlx5_0/1: mlx5_0/1 out_of_sequence 3 -> 9"


# --- through the engine ---------------------------------------------------------------------


def test_family_through_the_engine(fixture_text):
    gbe, slow = parse("iperf3", fixture_text(GBE)), parse("iperf3", fixture_text(TC_LIMITED))
    nodes = ring(["a", "b", "slow"], lambda c, s: slow if "slow" in (c, s) else gbe, claim=claim_ethernet(1))
    report = engine.run_checks(nodes, families=["bench_network"])
    assert report["nodes"]["slow"]["verdict"] == REJECT
    assert report["nodes"]["slow"]["failed"] == ["bench_network.iperf3"]
    assert report["nodes"]["a"]["failed"] == [] and report["nodes"]["b"]["failed"] == []

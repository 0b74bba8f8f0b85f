# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the nccl-tests parser (KIND ``nccl``).

Every expected value was read by hand from the recording named in the test.
"""

# pylint infers the parser's initial ``None`` for ``params``/``debug`` and flags every
# subscript of the filled-in values.
# pylint: disable=unsubscriptable-object

from __future__ import annotations

import json

import pytest

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nccl_tests import parse_nccl_tests
from gpufleet.parsers.registry import parse

D = "nccl/"


def _row(result, size):
    """The (first) row of ``size`` bytes."""
    return next(row for row in result["rows"] if row["size_bytes"] == size)


def _error_lines(result):
    return [item["line"] for item in result["errors"]]


# ---------------------------------------------------------------- old header format


def test_superbench_old_header_single_process(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "superbench-a100-sxm4-40gb-8gpu-single-node-allreduce-oldheader.txt"))
    assert res["header_format"] == "old"
    assert len(res["rows"]) == 34
    assert res["ranks"] == 8
    assert res["hosts"] == ["localhost"]
    assert res["devices"][0]["group"] is None
    assert res["devices"][7]["bus_id"] == "0x00"
    assert res["devices"][7]["name"] == "A100-SXM4-40GB"
    assert res["devices"][3]["pid"] == 112424
    assert res["params"]["ngpus"] == 8
    assert res["params"]["validation"] == 0
    big = _row(res, 8589934592)
    assert big["out_of_place"]["time_us"] == 63896
    assert isinstance(big["out_of_place"]["time_us"], int)
    assert big["out_of_place"]["busbw_gbs"] == 235.26
    assert big["in_place"]["busbw_gbs"] == 235.03
    assert big["redop"] == "sum"
    assert big["root"] is None
    assert big["out_of_place"]["wrong"] is None  # printed N/A
    assert res["rows"][0]["size_bytes"] == 0
    assert res["avg_busbw_gbs"] == 68.4048
    assert res["busbw_at_largest_size_gbs"] == 235.26
    assert res["max_busbw_gbs"] == 235.26
    assert res["wrong_total"] is None
    assert res["max_error"] is None
    assert res["out_of_bounds"] == 0
    assert res["out_of_bounds_status"] == "OK"
    assert res["complete"] is True
    assert res["failed"] is False
    # The interleaved 'NCCL INFO Launch mode Parallel' line is a debug line, not a row.
    assert res["debug"]["hosts"] == ["hostname"]


def test_deepops_4x_dgx_a100_old_error_column(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "deepops-4x-dgx-a100-ib-allreduce-PARTIAL-table-only.txt"))
    assert res["header_format"] == "old"
    assert len(res["rows"]) == 13
    assert res["rows"][0]["size_bytes"] == 1048576
    assert res["rows"][0]["out_of_place"]["wrong"] == 7e-07
    assert _row(res, 8388608)["in_place"]["wrong"] == 1e-06
    assert res["busbw_at_largest_size_gbs"] == 191.05
    assert res["max_busbw_gbs"] == 191.56
    assert res["max_error"] == 1e-06
    assert res["wrong_total"] is None
    assert res["avg_busbw_gbs"] == 113.289
    assert res["ranks"] is None
    assert res["devices"] == []
    assert res["complete"] is True
    assert res["failed"] is False


def test_deepops_2x_dgx_a100_crlf(fixture_text):
    text = fixture_text(D + "deepops-2x-dgx-a100-k8s-sriov-ib-allreduce-PARTIAL-table-only.txt")
    assert "\r\n" in text
    res = parse_nccl_tests(text)
    assert len(res["rows"]) == 30
    assert res["rows"][0]["out_of_place"]["wrong"] == 2e-07
    assert res["rows"][0]["in_place"]["wrong"] == 1e-07
    assert res["rows"][0]["line"] == 5
    big = _row(res, 4294967296)
    assert big["out_of_place"]["busbw_gbs"] == 188.53
    assert big["in_place"]["busbw_gbs"] == 188.70
    assert big["out_of_place"]["time_us"] == 42715
    assert res["avg_busbw_gbs"] == 53.7098
    assert res["max_error"] == 5e-07
    assert res["complete"] is True
    assert res["failed"] is False


def test_deepops_2x_dgx1_v100_roce(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "deepops-2x-dgx1-v100-roce-100g-allreduce-PARTIAL-table-only.txt"))
    assert len(res["rows"]) == 29
    assert res["rows"][0]["out_of_place"]["time_us"] == 2193.5
    assert _row(res, 2147483648)["out_of_place"]["time_us"] == 175667
    assert res["busbw_at_largest_size_gbs"] == 22.92
    assert res["max_busbw_gbs"] == 22.92
    assert res["avg_busbw_gbs"] == 7.76739
    assert res["complete"] is True
    assert res["failed"] is False


# ---------------------------------------------------------------- new header format


def test_gcm_8rank_mpi(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt"))
    assert res["header_format"] == "new"
    assert len(res["rows"]) == 6
    assert res["ranks"] == 8
    assert res["hosts"] == ["{hostname}"]
    assert [dev["pid"] for dev in res["devices"]][-1] == 66438
    assert res["devices"][0]["group"] == 0
    assert res["nccl_version"] == "2.16.2"
    assert res["nccl_version_full"] == "2.16.2+cuda11.6"
    first = res["rows"][0]
    assert first["size_bytes"] == 33554432
    assert first["count"] == 8388608
    assert first["type"] == "float"
    assert first["root"] == -1
    assert first["out_of_place"] == {"time_us": 344.8, "algbw_gbs": 97.32, "busbw_gbs": 170.31, "wrong": 0}
    assert res["busbw_at_largest_size_gbs"] == 231.72
    assert res["avg_busbw_gbs"] == 210.99
    assert res["wrong_total"] == 0
    assert res["params"]["min_bytes"] == 33554432
    assert res["params"]["agg_iters"] == 1
    assert res["failed"] is False
    assert res["complete"] is True
    assert res["debug"] is None


def test_gcm_openmpi_not_enough_slots(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "gcm-openmpi-not-enough-slots-failure.txt"))
    assert res["failed"] is True
    assert res["rows"] == []
    assert res["errors"][0]["line"] == 2
    assert "not enough slots" in res["errors"][0]["text"]
    # The message wraps onto line 3; it is joined.
    assert "requested by the application" in res["errors"][0]["text"]
    assert res["collective"] == "all_reduce_perf"
    assert res["complete"] is False


def test_h100_1node_nvls(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"))
    assert len(res["rows"]) == 6
    assert res["ranks"] == 8
    assert res["hosts"] == ["node005"]
    assert res["devices"][1]["bus_id"] == "0x6d"
    assert res["busbw_at_largest_size_gbs"] == 473.60
    assert res["max_busbw_gbs"] == 476.53
    assert res["avg_busbw_gbs"] == 439.369
    assert res["params"]["iters"] == 2
    assert res["params"]["warmup_iters"] == 5
    assert res["failed"] is False


def test_h100_2node_srun_prefix_validation0(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt"))
    assert res["rank_prefix"] == "srun"
    assert res["ranks"] == 16
    assert res["hosts"] == ["node005", "node007"]
    assert res["devices"][8]["pid"] == 541703
    assert len(res["rows"]) == 11
    assert res["params"]["validation"] == 0
    assert res["params"]["iters"] == 200
    assert all(row["out_of_place"]["wrong"] is None and row["in_place"]["wrong"] is None for row in res["rows"])
    assert res["wrong_total"] is None  # N/A is never 0
    assert res["busbw_at_largest_size_gbs"] == 155.57
    assert res["max_busbw_gbs"] == 167.87
    assert res["avg_busbw_gbs"] == 142.735
    assert res["complete"] is True
    assert res["failed"] is False


def test_h100_2node_ring_partial(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "h100-2node-16rank-ndr-ib-allreduce-RING-PARTIAL-issue290.txt"))
    assert res["params"] is None  # nThread line not pasted
    assert res["ranks"] == 16
    assert len(res["devices"]) == 16
    assert res["devices"][15]["bus_id"] == "0xc1"
    assert len(res["rows"]) == 11
    assert _row(res, 4294967296)["out_of_place"]["busbw_gbs"] == 89.90
    assert res["busbw_at_largest_size_gbs"] == 89.90
    assert res["max_busbw_gbs"] == 102.27
    assert res["avg_busbw_gbs"] == 85.5294
    assert res["failed"] is False


def test_gcp_a3mega_hash_stripped_first_lines(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "gcp-a3mega-2node-h100-tcpxo-allreduce-hash-stripped-first-lines.txt"))
    # Lines 1-4 lost their '#': the nThread line and Rank 0 are still read.
    assert res["params"]["max_bytes"] == 8589934592
    assert res["devices"][0]["rank"] == 0
    assert res["devices"][0]["pid"] == 6899
    assert res["devices"][0]["bus_id"] == "0000:04:00"
    assert res["ranks"] == 16
    assert res["hosts"] == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert len(res["rows"]) == 28
    assert res["rows"][0]["line"] == 24
    # The recording stops at the 1 GiB row: no footer.
    assert res["largest_size_bytes"] == 1073741824
    assert res["busbw_at_largest_size_gbs"] == 297.86
    assert res["avg_busbw_gbs"] is None
    assert res["complete"] is False
    assert res["failed"] is False


def test_aws_p4de_srun_prefix_table_only(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "aws-2x-p4de-efa-allreduce-srun-l-prefix-PARTIAL.txt"))
    assert res["rank_prefix"] == "srun"
    assert len(res["rows"]) == 29
    assert res["rows"][0]["out_of_place"]["time_us"] == 164.3
    assert _row(res, 2147483648)["out_of_place"]["busbw_gbs"] == 78.33
    assert _row(res, 536870912)["in_place"]["time_us"] == 13548
    assert res["complete"] is False
    assert res["avg_busbw_gbs"] is None
    assert res["failed"] is False


def test_aws_p5_srun_prefix_16g(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "aws-2x-p5-efa-allreduce-srun-l-prefix-PARTIAL.txt"))
    assert len(res["rows"]) == 32
    assert res["largest_size_bytes"] == 17179869184
    assert res["busbw_at_largest_size_gbs"] == 487.09
    assert res["max_busbw_gbs"] == 487.26
    assert res["wrong_total"] == 0
    assert res["complete"] is False


def test_aws_eks_tag_output_elided(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "aws-2x-p5-eks-mpijob-allreduce-tag-output-prefix-ELIDED.txt"))
    assert res["rank_prefix"] == "mpirun-tag-output"
    assert res["elided"] is True
    assert res["elided_lines"] == [5]
    assert len(res["rows"]) == 7
    assert res["rows"][0]["size_bytes"] == 0
    assert res["rows"][1]["size_bytes"] == 67108864
    assert res["busbw_at_largest_size_gbs"] == 437.79
    assert res["avg_busbw_gbs"] == 52.9753
    assert res["complete"] is True
    assert res["failed"] is False


def test_aws_batch_tag_output_trailing_whitespace(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "aws-batch-p5-allreduce-tag-output-trailing-ws-PARTIAL.txt"))
    assert res["header_format"] == "new"
    assert len(res["rows"]) == 32
    assert res["rows"][0]["out_of_place"]["time_us"] == 12.90
    assert res["busbw_at_largest_size_gbs"] == 483.05
    assert res["avg_busbw_gbs"] == 156.742
    assert res["complete"] is True
    assert res["failed"] is False


def test_aws_p5en_elided(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "aws-p5en-16node-allreduce-ELIDED.txt"))
    assert res["elided"] is True
    assert res["elided_lines"] == [5]
    assert len(res["rows"]) == 3
    assert res["rows"][0]["out_of_place"]["time_us"] == 983.2
    assert res["busbw_at_largest_size_gbs"] == 369.86
    assert res["avg_busbw_gbs"] == 84.0569
    assert res["failed"] is False


def test_azure_nd_h200_single_size(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt"))
    assert len(res["rows"]) == 1
    assert res["ranks"] == 8
    assert {dev["bus_id"] for dev in res["devices"]} == {"0x00"}
    assert res["devices"][0]["name"] == "NVIDIA H200"
    assert res["nccl_version"] == "2.19.3"
    assert res["rows"][0]["out_of_place"]["time_us"] == 31533
    assert res["busbw_at_largest_size_gbs"] == 476.72
    assert res["max_busbw_gbs"] == 478.11
    assert res["avg_busbw_gbs"] == 477.416
    assert res["params"]["iters"] == 10
    assert res["failed"] is False


def test_rtx3090_wrong_108_failed(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "rtx3090-2node-1nic-inc-allreduce-WRONG-108-FAILED.txt"))
    assert res["failed"] is True
    assert res["out_of_bounds"] == 108
    assert res["out_of_bounds_status"] == "FAILED"
    assert 38 in _error_lines(res)
    assert len(res["rows"]) == 27
    assert res["rows"][0]["out_of_place"]["wrong"] == 4
    assert _row(res, 1048576)["in_place"]["wrong"] == 524288
    # e-notation overflowing the #wrong column
    assert _row(res, 2097152)["out_of_place"]["wrong"] == 1.04858e06
    assert _row(res, 536870912)["in_place"]["wrong"] == 2.68435e08
    assert res["wrong_total"] > 0
    assert res["ranks"] == 2
    assert res["hosts"] == ["worker1", "worker2"]
    assert res["avg_busbw_gbs"] == 3.02663
    assert res["busbw_at_largest_size_gbs"] == 7.41


def test_rtx3090_one_rank(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "rtx3090-1rank-allreduce-busbw0-inplace-bogus-algbw.txt"))
    assert res["ranks"] == 1
    assert res["single_rank"] is True
    assert res["interleaved"] is False
    assert res["single_rank_runs"] is False
    assert len(res["rows"]) == 27
    assert _row(res, 536870912)["in_place"]["algbw_gbs"] == 2375009.56
    assert _row(res, 536870912)["out_of_place"]["algbw_gbs"] == 419.53
    assert res["max_busbw_gbs"] == 0.0
    assert res["avg_busbw_gbs"] == 0
    assert isinstance(res["avg_busbw_gbs"], int)
    assert res["failed"] is False


def test_rtx5090_debug_warn_then_failure(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "rtx5090x2-nccl-debug-info-warn-then-failure.txt"))
    assert res["failed"] is True
    assert res["rows"] == []
    assert res["ranks"] == 2
    assert res["hosts"] == ["GENOA-06"]
    assert res["nccl_version"] == "2.25.1"
    assert [w["line"] for w in res["warnings"]] == [25, 27, 30, 32, 67]
    assert "Cuda failure 1 'invalid argument'" in res["warnings"][-1]["text"]
    lines = _error_lines(res)
    assert 72 in lines and 77 in lines
    assert 58 in lines  # no rows after the column header on line 58
    assert res["transports"] == {"SHM": 4}
    assert res["using_network"] == "Socket"
    assert res["fallback_to_socket"] is False
    assert res["collective"] == "all_reduce_perf"


def test_h200_ssh_warning_and_prompt_lines(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "h200-2node-16rank-sockets-single-nic-allreduce-ssh-warning-line.txt"))
    assert res["errors"] == []
    assert res["failed"] is False
    assert res["ranks"] == 16
    assert res["hosts"] == ["nvidiatools-dgx-2d-workload", "nvidiatools-dgx-9d-workload"]
    assert res["devices"][15]["bus_id"] == "0000:df:00"
    assert res["nccl_version"] == "2.27.3"
    assert len(res["rows"]) == 32
    assert res["rows"][0]["line"] == 27
    assert res["busbw_at_largest_size_gbs"] == 92.33
    assert res["max_busbw_gbs"] == 92.35
    assert res["avg_busbw_gbs"] == 36.2205
    assert res["collective"] == "all_reduce_perf"


def test_l40s_sockets_reducing_maxbytes(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "l40s-2node-1gpu-each-sockets-ib-disabled-allreduce-reducing-maxbytes.txt"))
    assert res["reduced_max_bytes"] == 15534478677
    assert res["params"]["max_bytes"] == 17179869184
    assert res["ranks"] == 2
    assert res["devices"][1]["host"] == "nvidiatools-30-workload"
    assert res["devices"][1]["pid"] == 13965
    assert len(res["rows"]) == 31
    assert _row(res, 8589934592)["out_of_place"]["time_us"] == 1059765
    assert res["busbw_at_largest_size_gbs"] == 8.11
    assert res["avg_busbw_gbs"] == 3.98762
    assert res["failed"] is False


def test_l40s_roce_2gpu_each(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "l40s-2node-2gpu-each-roce-allreduce-9.6gbs.txt"))
    assert res["ranks"] == 4
    assert res["params"]["ngpus"] == 2
    assert res["devices"][3]["bus_id"] == "0000:e1:00"
    assert len(res["rows"]) == 31
    assert _row(res, 16777216)["out_of_place"]["busbw_gbs"] == 9.60
    assert res["busbw_at_largest_size_gbs"] == 9.63
    assert res["avg_busbw_gbs"] == 4.74277
    assert res["failed"] is False


def test_oci_2node_nccltests_2_17_9_compact(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "oci-2node-bm-gpu-b4.8-a100-40gb-16rank-nccltests-2.17.9-compact-devices-no-avg-line.txt"))
    assert res["nccl_tests_version"] == "2.17.9"
    assert res["nccl_version"] == "2.29.3"
    assert res["collective"] == "all_reduce_perf"
    assert [dev["rank"] for dev in res["devices"]] == [0, 7, 8, 15]
    assert res["ranks"] == 16
    assert res["devices_compact"] is True
    assert len(res["hosts"]) == 2
    assert len(res["rows"]) == 4
    assert res["rows"][0]["out_of_place"]["time_us"] == 10887.4
    assert res["busbw_at_largest_size_gbs"] == 189.60
    assert res["avg_busbw_gbs"] is None
    assert res["out_of_bounds_status"] == "OK"
    assert res["complete"] is True
    assert res["failed"] is False


def test_oci_kubectl_tail_mid_run(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "oci-2tray-gb200-8rank-mnnvl-allreduce-kubectl-logs-tail20-PARTIAL.txt"))
    assert res["header_format"] is None
    assert res["tables"] == 0
    assert len(res["rows"]) == 8
    assert res["rows"][0]["size_bytes"] == 268435456
    assert res["busbw_at_largest_size_gbs"] == 847.12
    assert res["largest_size_bytes"] == 34359738368
    assert res["ranks"] == 8  # from 'nranks 8' of the Destroy COMPLETE lines
    assert res["hosts"] == ["nccl-test-worker-0", "nccl-test-worker-1"]
    assert res["avg_busbw_gbs"] == 260.778
    assert res["complete"] is True
    assert res["failed"] is False


def test_oci_32node_no_header_paste(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "oci-32node-gb200-v3.4-128rank-allreduce-mnnvl-2racks-PARTIAL-no-header.txt"))
    assert res["ranks"] == 128
    assert res["devices"][0]["bus_id"] == "0019:06:00"
    assert res["devices_compact"] is True
    assert res["nccl_version"] == "2.29.2"
    assert len(res["rows"]) == 33
    assert _row(res, 1073741824)["out_of_place"]["busbw_gbs"] == 284.58
    assert _row(res, 536870912)["out_of_place"]["busbw_gbs"] == 411.01
    assert res["busbw_at_largest_size_gbs"] == 683.57
    assert res["avg_busbw_gbs"] == 152.682
    assert res["collective"] == "all_reduce_perf"
    assert res["failed"] is False


# -------------------------------------------------------- NVIDIA/nccl-tests#294: MPI builds


def test_crusoe_without_mpi_interleaved_single_rank_runs(fixture_text):
    res = parse_nccl_tests(
        fixture_text(D + "issue294-crusoe-h100-mpirun-16rank-nccltests-built-WITHOUT-MPI-busbw0-avg0-interleaved-no-header-PARTIAL.txt")
    )
    assert len(res["rows"]) == 24
    assert res["interleaved"] is True
    assert res["single_rank"] is True
    assert res["single_rank_runs"] is True
    assert res["failed"] is True
    assert res["ranks"] == 1  # 'nranks 1' on line 25
    assert res["rows"][-1]["in_place"]["algbw_gbs"] == 7017920.42
    assert res["rows"][0]["out_of_place"]["busbw_gbs"] == 0.0
    assert res["avg_busbw_gbs"] == 0
    assert any("single-rank" in item["text"] for item in res["errors"])


def test_crusoe_after_mpi_fix(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "issue294-crusoe-2node-16rank-h100-allreduce-after-MPI-fix-444GBs-no-header-PARTIAL.txt"))
    assert len(res["rows"]) == 5
    assert res["interleaved"] is False
    assert res["single_rank_runs"] is False
    assert res["ranks"] == 16
    assert res["hosts"] == ["h100-test-rg-1", "h100-test-rg-2"]
    assert res["busbw_at_largest_size_gbs"] == 444.25
    assert res["max_busbw_gbs"] == 444.71
    assert res["avg_busbw_gbs"] == 406.034
    assert res["failed"] is False


def test_crusoe_sharp_warn_no_rows(fixture_text):
    res = parse_nccl_tests(
        fixture_text(D + "issue294-crusoe-2node-16rank-h100-ib-sharp-WARN-socket-family-33621-bootstrap-internal-error-PARTIAL-head.txt")
    )
    assert res["failed"] is True
    assert res["rows"] == []
    assert res["ranks"] == 16
    assert res["hosts"] == ["h100-2", "h100-4"]
    assert res["devices"][8]["bus_id"] == "0002:00:01"
    assert res["nccl_version"] == "2.18.3"
    assert [w["line"] for w in res["warnings"]] == [84]
    assert "family 33621" in res["warnings"][0]["text"]
    assert 84 in _error_lines(res)
    assert res["using_network"] == "IB"
    assert res["debug"]["net_plugin"] == "IBext_v6"


# ---------------------------------------------------------------- failures without a table


def test_issue300_interleaved_failure_blocks(fixture_text):
    res = parse_nccl_tests(
        fixture_text(D + "issue300-a100-pcie-slurm-tres-bind-WARN-nvmlDeviceGetHandleByPciBusId-4ranks-interleaved-PARTIAL.txt")
    )
    assert res["failed"] is True
    assert res["elided"] is True
    assert res["elided_lines"] == [1]
    assert [w["line"] for w in res["warnings"]] == [2, 9, 16, 35]
    # the same WARN, Test NCCL failure and backtrace line of the 4 ranks (pids 7038-7041) are one entry each
    assert [(item["line"], item["lines"], item["count"], item["source"]) for item in res["errors"]] == [
        (2, [2, 9, 16, 35], 4, "rank"), (24, [24, 28, 31, 43], 4, "rank"), (25, [25, 32, 33, 44], 4, "rank"),
        (None, [], 1, "parser")]
    assert res["errors"][1]["hosts"] == ["my-node"]
    assert res["errors"][1]["text"] == ("my-node: Test NCCL failure common.cu:1126 'unhandled system error (run with "
                                        "NCCL_DEBUG=INFO for details) / '")
    assert res["cause"] == ("my-node:7039:7435 [0] misc/nvmlwrap.cc:183 NCCL WARN nvmlDeviceGetHandleByPciBusId() "
                            "failed: Not Found; my-node: Test NCCL failure common.cu:1126 'unhandled system error "
                            "(run with NCCL_DEBUG=INFO for details) / '")
    assert res["hosts"] == ["my-node"]
    assert res["rows"] == []


def test_issue320_timestamped_warn(fixture_text):
    res = parse_nccl_tests(
        fixture_text(D + "issue320-3x-rtx-a6000-1node-WARN-timestamped-failed-open-libnvidia-ml-unhandled-system-error.txt")
    )
    assert res["failed"] is True
    assert res["ranks"] == 3
    assert res["hosts"] == ["gpu0301"]
    assert res["nccl_version"] == "2.26.2"
    assert res["warnings"][0]["line"] == 18
    assert res["warnings"][0]["host"] == "gpu0301"
    assert "Failed to open libnvidia-ml.so.1" in res["warnings"][0]["text"]
    assert 36 in _error_lines(res)
    assert res["collective"] == "all_reduce_perf"


def test_dgx_spark_multiline_warn_abort(fixture_text):
    res = parse_nccl_tests(
        fixture_text(D + "dgx-spark-gb10-2node-roce-bond0-alltoall-WARN-multiline-completion-error-status12-abort-PARTIAL-tail.txt")
    )
    assert res["failed"] is True
    assert len(res["warnings"]) == 1
    warn = res["warnings"][0]
    assert warn["line"] == 1
    assert "status=12 opcode=129" in warn["text"]  # line 2, joined
    assert "hca roceP2p1s0f0" in warn["text"]  # line 3, joined
    lines = _error_lines(res)
    assert 5 in lines  # Abort COMPLETE
    assert 6 in lines  # Test NCCL failure
    assert 2 not in lines and 3 not in lines
    assert res["ranks"] == 2


def test_sriov_ucx_error_before_nccl(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "sriov-pods-ucx-ibv-create-ah-no-such-device-before-nccl-init-issue327.txt"))
    assert res["failed"] is True
    assert res["errors"][0]["line"] == 3
    assert "UCX" in res["errors"][0]["text"]
    assert "No such device" in res["errors"][0]["text"]  # wrapped onto line 4, joined
    assert res["rows"] == []
    assert res["collective"] == "all_reduce_perf"


def test_together_single_prefix_stripped_warn(fixture_text):
    res = parse_nccl_tests(fixture_text(D + "together-b200-64node-single-WARN-line-completion-error4-vendor81-PREFIX-STRIPPED-PARTIAL.txt"))
    assert res["failed"] is True
    assert res["warnings"][0]["line"] == 1
    assert res["warnings"][0]["host"] is None
    assert "vendor err 81" in res["warnings"][0]["text"]
    assert res["rows"] == []


# ---------------------------------------------------------------- nccl-debug recordings read as nccl


def test_gather_perf_with_trace_lines(fixture_text):
    res = parse_nccl_tests(
        fixture_text("nccl-debug/a100-pcie-2node-1gpu-roce+ib-gdrdma-shared-gather-perf-TRACE-issue350-NO-SUMMARY-PARTIAL.txt")
    )
    assert res["collective"] == "gather_perf"
    assert res["params"]["step"] == 134217728
    assert res["params"]["step_kind"] == "bytes"
    assert res["reduced_max_bytes"] == 12703978837
    assert len(res["rows"]) == 85
    first = res["rows"][0]
    assert first["redop"] == "none"
    assert first["root"] == 0
    assert first["out_of_place"]["busbw_gbs"] == 20.19
    assert _row(res, 6442450944)["out_of_place"]["busbw_gbs"] == 10.51
    assert res["busbw_at_largest_size_gbs"] == 10.91
    assert res["complete"] is False
    assert res["transports"] == {"NET/IB": 6}
    assert res["using_network"] == "IB"
    assert res["debug"]["gdrdma"] is True


# ---------------------------------------------------------------- synthetic variants


def test_registry_kind(fixture_text):
    res = parse("nccl", fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt"))
    assert res["avg_busbw_gbs"] == 210.99


def test_result_is_json_serialisable(fixture_text):
    res = parse_nccl_tests(fixture_text("nccl-debug/tpgds-aihub0008-2node-16rank-h100-8x-roce-gdrdma-p2p-ipc-ofi-plugin-fallback-to-IB-PARTIAL.txt"))
    assert json.loads(json.dumps(res))["debug"]["transports"]["P2P/IPC"] == 25


def test_crlf_copy_reads_like_lf(fixture_text):
    # synthetic: LF recording converted to CRLF
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt").replace("\n", "\r\n")
    res = parse_nccl_tests(text)
    assert len(res["rows"]) == 6
    assert res["avg_busbw_gbs"] == 210.99
    assert res["hosts"] == ["{hostname}"]


def test_ansi_escapes(fixture_text):
    # synthetic: the column header and a row wrapped in colour escapes
    text = fixture_text(D + "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt")
    text = text.replace("#       size", "\x1b[4m#       size").replace("#wrong\n", "#wrong\x1b[0m\n")
    text = text.replace("  4294967296", "\x1b[1;32m  4294967296").replace("476.53      0\n", "476.53      0\x1b[0m\n")
    res = parse_nccl_tests(text)
    assert len(res["rows"]) == 6
    assert res["busbw_at_largest_size_gbs"] == 473.60


def test_srun_prefix_added(fixture_text):
    # synthetic: every line of a clean recording given an srun -l ' 3: ' prefix
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt")
    text = "\n".join(" 3: " + line for line in text.split("\n"))
    res = parse_nccl_tests(text)
    assert res["rank_prefix"] == "srun"
    assert res["ranks"] == 8
    assert len(res["rows"]) == 6
    assert res["avg_busbw_gbs"] == 210.99


def test_intel_mpi_prefix_added(fixture_text):
    # synthetic: Intel MPI / MPICH -prepend-rank '[0] ' prefix on every line
    text = fixture_text(D + "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt")
    text = "\n".join("[0] " + line for line in text.split("\n"))
    res = parse_nccl_tests(text)
    assert res["rank_prefix"] == "mpi-rank"
    assert res["ranks"] == 8
    assert res["busbw_at_largest_size_gbs"] == 473.60


def test_kubectl_timestamps_added(fixture_text):
    # synthetic: kubectl logs --timestamps ISO stamp before every line
    text = fixture_text(D + "azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt")
    text = "\n".join("2025-06-12T16:57:52.123456789Z " + line for line in text.split("\n"))
    res = parse_nccl_tests(text)
    assert res["busbw_at_largest_size_gbs"] == 476.72
    assert res["ranks"] == 8


def test_lost_hash_on_header_lines(fixture_text):
    # synthetic: every '#' removed
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt").replace("#", "")
    res = parse_nccl_tests(text)
    assert res["header_format"] == "new"
    assert res["ranks"] == 8
    assert res["avg_busbw_gbs"] == 210.99
    assert res["out_of_bounds_status"] == "OK"


def test_truncated_mid_row_names_the_line(fixture_text):
    # synthetic: recording cut in the middle of line 19 (third result row)
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt")
    cut = text.index("   134217728      33554432") + 50
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text[:cut])
    assert info.value.line == 19


def test_truncated_mid_row_headerless(fixture_text):
    # synthetic: headerless kubectl tail cut inside line 3
    text = fixture_text(D + "oci-2tray-gb200-8rank-mnnvl-allreduce-kubectl-logs-tail20-PARTIAL.txt")
    lines = text.split("\n")
    text = "\n".join(lines[:2] + [lines[2][:40]])
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text)
    assert info.value.line == 3


def test_unparsable_number_names_the_line(fixture_text):
    # synthetic: the out-of-place time of line 18 damaged
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt").replace("557.4", "557.4.1")
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text)
    assert info.value.line == 18


def test_wrong_cell_not_a_count(fixture_text):
    # synthetic: a #wrong cell of line 20 damaged into a fraction
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt")
    text = text.replace("227.02      0", "227.02    0.5")
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text)
    assert info.value.line == 21


def test_control_character_in_row(fixture_text):
    # synthetic: a NUL byte inside a busbw cell of line 17
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt").replace("170.31", "170\x0031")
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text)
    assert info.value.line == 17


def test_hang_after_header(fixture_text):
    # synthetic: the recording stops right after the column header (line 15 is the units line)
    text = fixture_text(D + "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt")
    text = "\n".join(text.split("\n")[:15]) + "\n"
    res = parse_nccl_tests(text)
    assert res["failed"] is True
    assert res["complete"] is False
    assert res["rows"] == []
    assert _error_lines(res) == [14]
    assert res["ranks"] == 8
    # nothing followed the header: hung, never "no figure" or a figure of 0
    assert res["errors"][0]["text"] == "hung: the table header was printed and no result row followed"
    assert res["cause"] == "hung: the table header was printed and no result row followed"
    assert res["busbw_at_largest_size_gbs"] is None and res["wrong_total"] is None


def test_header_then_an_error_is_not_hung(fixture_text):
    # the real recording: after the header (line 58) only INFO lines, then the WARN (67) and Test NCCL failure (72)
    res = parse_nccl_tests(fixture_text(D + "rtx5090x2-nccl-debug-info-warn-then-failure.txt"))
    finding = next(item for item in res["errors"] if item["source"] == "parser")
    assert (finding["line"], finding["text"]) == (58, "no result rows after the table header")
    assert res["cause"].startswith("GENOA-06:4766:4766 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 "
                                   "'invalid argument'; ")


def test_hostile_markup_kept_as_text(fixture_text):
    # synthetic: a host name with markup and a NUL, and a markup WARN line appended
    text = fixture_text(D + "rtx3090-2node-1nic-inc-allreduce-WRONG-108-FAILED.txt")
    text = text.replace("on    worker2", "on <script>alert(1)</script>\x00")
    text += "evil:1:1 [0] x.cc:1 NCCL WARN <img src=x onerror=alert(1)>{{ lookup('pipe','id') }}\n"
    res = parse_nccl_tests(text)
    assert res["hosts"][1] == "<script>alert(1)</script>\x00"
    assert res["warnings"][-1]["text"].endswith("{{ lookup('pipe','id') }}")
    assert res["warnings"][-1]["host"] == "evil"


def test_launcher_prose_is_not_a_row(fixture_text):
    # synthetic: Open MPI's '2 total processes killed' after a good table
    text = fixture_text(D + "azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt")
    text += "2 total processes killed (some possibly by mpirun during cleanup)\n"
    res = parse_nccl_tests(text)
    assert len(res["rows"]) == 1


def test_rows_from_two_srun_ranks_are_single_rank_runs(fixture_text):
    # synthetic: the one-rank table printed by two srun ranks ('0: ' and '1: ')
    text = fixture_text(D + "rtx3090-1rank-allreduce-busbw0-inplace-bogus-algbw.txt")
    rows = [line for line in text.split("\n") if line.startswith("        ") and "float" in line][:4]
    mixed = "\n".join("%d: %s" % (i % 2, row) for i, row in enumerate(rows[:2] * 2))
    res = parse_nccl_tests(mixed)
    assert res["interleaved"] is True
    assert res["single_rank_runs"] is True
    assert res["failed"] is True


def test_bracket_elision(fixture_text):
    # synthetic: rows 5-33 of a recording replaced by an author's '[...]'
    lines = fixture_text(D + "h200-2node-16rank-sockets-single-nic-allreduce-ssh-warning-line.txt").split("\n")
    text = "\n".join(lines[:30] + ["[...]"] + lines[56:])
    res = parse_nccl_tests(text)
    assert res["elided"] is True
    assert res["elided_lines"] == [31]
    assert res["busbw_at_largest_size_gbs"] == 92.33


def test_empty_and_unrecognisable_input():
    with pytest.raises(ParseError) as info:
        parse_nccl_tests("")
    assert info.value.line is None
    with pytest.raises(ParseError):
        parse_nccl_tests("  \n\r\n")
    with pytest.raises(ParseError):
        parse_nccl_tests("hello world\nthis is not nccl-tests\n")


def test_generic_error_text_reported():
    res = parse_nccl_tests("bash: all_reduce_perf: command not found\n")
    assert res["failed"] is True
    assert res["errors"][0]["line"] == 1
    assert res["collective"] == "all_reduce_perf"


def test_row_missing_leading_cells_raises(fixture_text):
    # synthetic: size and count of line 20 lost (the row now starts with 'float')
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt")
    text = text.replace("   268435456      67108864     float", "                               float")
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text)
    assert info.value.line == 20


def test_nccl_func_proto_algo_matrix_inside_the_table_is_skipped_by_its_announcing_line(fixture_text):
    """NCCL >= 2.24 prints "Enabled NCCL Func/Proto/Algo Matrix:" and its rows without NCCL's prefix; inside the
    results (EDITED recording) they read as broken rows and the whole run was refused. The same run without the block
    is the healthy case: the same 34 rows and figures, no block."""
    plain = parse_nccl_tests(fixture_text("nccl/superbench-a100-sxm4-40gb-8gpu-single-node-allreduce-oldheader.txt"))
    edited = parse_nccl_tests(fixture_text(
        "nccl/EDITED-superbench-a100-8gpu-allreduce-with-nccl-2.27-func-proto-algo-matrix-inside-the-table.txt"))
    assert plain["nccl_blocks"] == []
    # the INFO line is line 17; its header and five function rows 18-23, the blank line 24 closes it
    assert edited["nccl_blocks"] == [{"title": "Func/Proto/Algo matrix", "line": 17, "lines": [18, 19, 20, 21, 22, 23]}]
    assert (edited["failed"], len(edited["rows"]), edited["busbw_at_largest_size_gbs"]) == (False, 34, 235.26)
    assert [row["size_bytes"] for row in edited["rows"]] == [row["size_bytes"] for row in plain["rows"]]
    assert edited["rows"][0]["line"] == plain["rows"][0]["line"] + 8


# ---------------------------------------------------------------- the cause of a failure, one entry per error

RANKS_FAILED = D + "h100-1024rank-allreduce-5-rows-then-39-ranks-Test-NCCL-failure-mpirun-detected-PARTIAL-tail.txt"
LAUNCHER_ONLY = D + ("azure-nd-h100-v5-8rank-allreduce-mpirun-ucx-warn-ELIDED-primary-job-terminated-mpirun-detected-"
                     "exit3.txt")
FAILURE_1204 = "Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"


def test_the_same_failure_of_39_ranks_is_one_entry_and_the_cause_not_mpirun(fixture_text):
    res = parse_nccl_tests(fixture_text(RANKS_FAILED))
    assert res["failed"] is True and len(res["rows"]) == 5 and res["busbw_at_largest_size_gbs"] == 367.29
    failure, backtrace, launcher = res["errors"]
    # lines 12, 14 .. 86 and 88 (HCA-19 prints no backtrace line), on 37 hosts (HCA-108 and HCA-13 twice)
    assert failure["text"] == "HCA-128: " + FAILURE_1204
    assert (failure["line"], failure["count"], failure["source"]) == (12, 39, "rank")
    assert failure["lines"] == list(range(12, 87, 2)) + [88]
    assert len(failure["hosts"]) == 37 and failure["hosts"][:3] == ["HCA-128", "HCA-108", "HCA-107"]
    assert failure["hosts"][-1] == "HCA-19"
    assert (backtrace["line"], backtrace["count"]) == (13, 38)
    assert backtrace["text"] == ".. HCA-128 pid 757466: Test failure common.cu:915"
    assert (launcher["line"], launcher["source"]) == (90, "launcher")
    assert launcher["text"].startswith("mpirun detected that one or more processes exited with non-zero status")
    assert res["cause"] == "HCA-128: " + FAILURE_1204


def test_only_launcher_lines_the_cause_is_the_first_of_them(fixture_text):
    res = parse_nccl_tests(fixture_text(LAUNCHER_ONLY))
    assert res["failed"] is True and res["elided_lines"] == [2]
    assert [(item["line"], item["source"]) for item in res["errors"]] == [
        (4, "launcher"), (8, "launcher"), (None, "parser")]
    # the message wrapped over lines 4-5 is joined; the UCX WARN (line 1) is no error
    assert res["cause"] == ("Primary job terminated normally, but 1 process returned a non-zero exit code. "
                            "Per user-direction, the job has been aborted.")


def test_a_rank_error_printed_after_the_launcher_summary_is_still_the_cause(fixture_text):
    # EDITED: the launcher's boxes (stderr) came out before a rank's Test NCCL failure line (stdout)
    text = fixture_text(LAUNCHER_ONLY) + "HCA-19: %s\n" % FAILURE_1204
    res = parse_nccl_tests(text)
    assert res["cause"] == "HCA-19: " + FAILURE_1204
    assert res["errors"][2]["line"] == 13 and res["errors"][2]["source"] == "rank"


def test_nccl_tests_argument_errors_are_the_cause():
    # SYNTHETIC: what every rank of nccl-tests prints for -b 1x (src/common.cu: "invalid size specified for
    # 'minbytes'") and for an unknown option ("invalid option '%c'" and its usage text), then srun's per-task lines
    text = ("invalid size specified for 'minbytes'\ninvalid size specified for 'minbytes'\n"
            "srun: error: node1: task 0: Exited with exit code 255\n"
            "srun: error: node2: task 1: Exited with exit code 255\n")
    res = parse_nccl_tests(text)
    assert res["cause"] == "invalid size specified for 'minbytes'"
    argument, launcher, finding = res["errors"]
    assert (argument["lines"], argument["count"], argument["source"]) == ([1, 2], 2, "rank")
    assert (launcher["lines"], launcher["hosts"], launcher["ranks"]) == ([3, 4], ["node1", "node2"], [0, 1])
    assert launcher["source"] == "launcher"
    assert finding == {"line": None, "text": "no result rows in the output (hang, crash or launch failure)",
                       "lines": [], "count": 1, "hosts": [], "ranks": [], "source": "parser"}
    usage = parse_nccl_tests("invalid option '?'\nUSAGE: ./build/all_reduce_perf \n\t[-t,--nthreads <num threads>] \n")
    assert usage["cause"] == "invalid option '?'"  # one line: the usage text is not joined to it


def test_a_launcher_that_could_not_reach_a_node_is_the_cause():
    # SYNTHETIC: OpenSSH's words when mpirun's ssh to the second node is refused, then ORTE's. The node's
    # bench_process.classify names this outcome launcher_error from the same table (module_utils/launcher_words.py);
    # the parser reads the ssh line as the launcher's failure, not as text to skip.
    text = ("ssh: connect to host node2 port 22: Connection refused\n"
            "ORTE was unable to reliably start one or more daemons.\n")
    res = parse_nccl_tests(text)
    assert res["cause"] == "ssh: connect to host node2 port 22: Connection refused"
    assert [(item["lines"], item["source"]) for item in res["errors"][:2]] == [([1], "launcher"), ([2], "launcher")]


# ---------------------------------------------------------------- rows fused with another process's output


def _fuse_line(text, number, new_line):
    lines = text.split("\n")
    lines[number - 1] = new_line
    return "\n".join(lines)


def test_row_fused_with_a_failure_on_its_line_keeps_the_rows_before_it(fixture_text):
    # EDITED: line 11's out-of-place half, then line 12 (HCA-128's Test NCCL failure) on the same line
    text = fixture_text(RANKS_FAILED)
    lines = text.split("\n")
    fused = lines[10][:lines[10].index("367.29") + 6] + "      0" + lines[11]
    res = parse_nccl_tests(_fuse_line(text, 11, fused))
    assert res["failed"] is True
    assert [row["size_bytes"] for row in res["rows"]] == [1073741824, 2147483648, 4294967296, 8589934592]
    assert res["busbw_at_largest_size_gbs"] == 364.57  # 8G: the fused 16G row is no figure
    row = "17179869184    4294967296     float     sum      -1    93457  183.83  367.29      0"
    assert res["damaged"] == {"line": 11, "text": fused.strip(), "row": row, "by_line": 11,
                              "by": "HCA-128: " + FAILURE_1204}
    assert res["cause"] == "result row at line 11 cut by: HCA-128: " + FAILURE_1204
    assert res["errors"][1]["lines"][:2] == [11, 12] and res["errors"][1]["count"] == 40


def test_row_preamble_glued_to_a_failure_and_ompi_signal_lines(fixture_text):
    # EDITED: nccl-tests prints a row in three parts; the size .. root part of the first size (8 B, 2 floats),
    # then without a space the Test NCCL failure of line 72, and a signal line of Open MPI after a full half
    text = fixture_text(D + "rtx5090x2-nccl-debug-info-warn-then-failure.txt")
    lines = text.split("\n")
    res = parse_nccl_tests(_fuse_line(text, 72, "           8             2     float     sum      -1" + lines[71]))
    assert res["damaged"]["line"] == 72 and res["damaged"]["row"] == "8             2     float     sum      -1"
    assert res["rows"] == []
    # the WARN (line 67) came first: it leads the cause
    assert res["cause"] == ("GENOA-06:4766:4766 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'; "
                            "GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with NCCL_DEBUG=INFO "
                            "for details) / '; it cut the result row at line 72")
    signal = "   1048576    262144  float  sum  -1  123.4  8.50  14.87  0  [node2:1234] *** Process received signal ***"
    res = parse_nccl_tests(_fuse_line(text, 72, signal))
    assert res["damaged"]["by"] == "[node2:1234] *** Process received signal ***"
    assert any(item["line"] == 72 and item["source"] == "rank" for item in res["errors"])


def test_row_cut_short_by_a_warn_on_the_next_line(fixture_text):
    # EDITED: the size .. root part of a row on its own line 66 before the blank line and the WARN (now 68): NCCL
    # starts a WARN on a new line
    lines = fixture_text(D + "rtx5090x2-nccl-debug-info-warn-then-failure.txt").split("\n")
    text = "\n".join(lines[:65] + ["           8             2     float     sum      -1"] + lines[65:])
    res = parse_nccl_tests(text)
    assert (res["damaged"]["line"], res["damaged"]["by_line"]) == (66, 68)
    assert res["cause"].startswith("result row at line 66 cut by: GENOA-06:4766:4766 [1] enqueue.cc:1500 NCCL WARN "
                                   "Cuda failure 1 'invalid argument'; GENOA-06: Test NCCL failure common.cu:392")
    assert [w["line"] for w in res["warnings"]] == [25, 27, 30, 32, 68]
    # the same line at the end of the text is a recording cut there: it still names the line
    with pytest.raises(ParseError) as info:
        parse_nccl_tests("\n".join(lines[:65] + ["           8             2     float     sum      -1"]))
    assert info.value.line == 66


def test_rows_after_a_damaged_row_are_not_read(fixture_text):
    # EDITED: the first row (line 17) cut by an NCCL WARN without its host prefix; the 5 rows after it are left
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt")
    res = parse_nccl_tests(text.replace("97.32  170.31", "97.32  NCCL WARN Cuda failure 'out of memory'"))
    assert res["rows"] == [] and res["damaged"]["line"] == 17 and res["failed"] is True
    assert res["warnings"][0] == {"line": 17, "text": "NCCL WARN Cuda failure 'out of memory'      0    349.5   95.99  "
                                  "167.99      0", "host": None}


def test_a_placeholder_cell_is_never_a_value(fixture_text):
    # EDITED: the busbw of line 17 masked by an author
    text = fixture_text(D + "gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt")
    for placeholder in ("<masked>", "...", "N/A"):
        with pytest.raises(ParseError) as info:
            parse_nccl_tests(text.replace("170.31", placeholder))
        assert info.value.line == 17

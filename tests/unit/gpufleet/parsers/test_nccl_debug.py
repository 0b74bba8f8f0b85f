# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the NCCL_DEBUG line parser (KIND ``nccl-debug``).

Every expected value was read by hand from the recording named in the test.
"""

from __future__ import annotations

import json

import pytest

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nccl_debug import parse_nccl_debug
from gpufleet.parsers.registry import parse

D = "nccl-debug/"
A100 = D + "a100-pcie-2node-1gpu-roce+ib-gdrdma-shared-gather-perf-TRACE-issue350-NO-SUMMARY-PARTIAL.txt"
HARVARD = D + "harvard-fasrc-singularity-ibv-open-eacces-socket-fallback-over-ib0-PREFIX-STRIPPED-PARTIAL.txt"
JEANZAY = D + "jeanzay-h100-2node-ib-hw-but-socket-fallback-rdma-core-dlvsym-PARTIAL-ANNOTATED.txt"
NF5688 = D + "nf5688m7-8x-h800-1node-g8-ib-no-device-socket-nvls-available-p2p-direct-pointer-PARTIAL.txt"
TPGDS = D + "tpgds-aihub0008-2node-16rank-h100-8x-roce-gdrdma-p2p-ipc-ofi-plugin-fallback-to-IB-PARTIAL.txt"


def _reason_lines(result):
    return [item["line"] for item in result["ib_disabled_or_absent"]]


def test_a100_roce_and_ib_gdrdma(fixture_text):
    res = parse_nccl_debug(fixture_text(A100))
    assert res["nccl_version"] == "2.16.5"
    assert res["nccl_version_full"] == "2.16.5+cuda11.8"
    assert res["cuda_driver_version"] == 12080
    assert res["hosts"] == ["n013"]
    assert res["nranks"] == 2
    assert res["using_network"] == "IB"
    assert res["net_plugin"] == "IB"
    assert res["external_net_plugin"] is None
    devices = [(d["index"], d["name"], d["port"], d["kind"]) for d in res["net_devices"]]
    assert devices == [(0, "mlx5_0", 1, "RoCE"), (1, "mlx5_2", 1, "IB")]
    assert res["net_devices"][0]["line"] == 13
    assert res["relaxed_ordering"] is True
    assert res["oob_interfaces"] == ["ibp209s0f0"]
    assert res["bootstrap_interfaces"] == ["ibp209s0f0"]
    assert res["via"] == {"NET/IB/1/GDRDMA": 4, "NET/IB/1/GDRDMA/Shared": 2}
    assert res["transports"] == {"NET/IB": 6}
    assert res["gdrdma"] is True
    assert res["dmabuf"] is True
    assert res["channels"]["ring"] == 2
    assert res["channels"]["coll"] == 2
    assert res["channels"]["p2p"] == 2
    assert res["fallback_to_socket"] is False
    assert res["ib_disabled_or_absent"] == []
    assert res["warnings"] == []


def test_harvard_prefix_stripped_socket_fallback_over_ib0(fixture_text):
    res = parse_nccl_debug(fixture_text(HARVARD))
    assert res["hosts"] == []  # the author stripped host:pid:tid [dev]
    assert res["using_network"] == "Socket"
    assert res["fallback_to_socket"] is True
    assert res["elided"] is True
    assert [w["line"] for w in res["warnings"]] == [2, 3, 5]
    assert res["warnings"][1]["text"] == "NCCL WARN NET/IB : Unable to open device mlx5_0"
    assert _reason_lines(res) == [2, 3, 5, 6]
    assert res["ib_disabled_or_absent"][3]["text"] == "NET/IB : No device found."
    assert res["net_devices"][0]["name"] == "ib0"
    assert res["net_devices"][0]["kind"] == "Socket"
    assert res["net_devices"][0]["address"] == "10.31.183.43"
    assert res["via"] == {"NET/Socket/0": 4}
    assert res["transports"] == {"NET/Socket": 4}
    assert res["gdrdma"] is False
    assert any("mlx5_0" in reason for reason in res["hca_evidence"])
    assert any("ib0" in reason for reason in res["hca_evidence"])


def test_jeanzay_annotated_socket_fallback(fixture_text):
    res = parse_nccl_debug(fixture_text(JEANZAY))
    assert res["hosts"] == ["jzxh330", "jzxh331"]
    assert res["elided"] is True
    assert res["using_network"] == "Socket"
    assert res["net_plugin"] == "Socket"  # 'Assigned NET plugin Socket to comm', line 21
    assert res["net_plugins_initialized"] == ["Socket"]
    assert res["net_plugin_failures"] == [{"line": 14, "text": "Failed to initialize NET plugin IB"}]
    assert _reason_lines(res) == [3, 6, 12, 13, 14]
    assert [d["name"] for d in res["net_devices"]] == ["ibp24s0", "ibp41s0", "ibp154s0", "ibp170s0"]
    assert res["net_devices"][3]["address"] == "10.100.9.40"
    assert res["oob_interfaces"] == ["ibp24s0"]
    assert res["gdrdma"] is False  # 'GPU Direct RDMA Disabled for HCA 0', line 25
    assert res["fallback_to_socket"] is True
    assert any("libmlx5-rdmav34.so" in reason for reason in res["hca_evidence"])
    assert res["warnings"] == []


def test_nf5688_no_ib_device_single_node(fixture_text):
    res = parse_nccl_debug(fixture_text(NF5688))
    assert res["nccl_version"] == "2.18.3"
    assert res["cuda_driver_version"] == 12020
    assert res["hosts"] == ["nf5688m7-1"]
    assert res["nranks"] == 8
    assert res["using_network"] == "Socket"
    assert _reason_lines(res) == [17]
    assert [d["name"] for d in res["net_devices"]] == ["enx785ee8a015a1", "veth6f0b7dd"]
    assert res["net_devices"][1]["address"] == "fe80::90a4:35ff:fe22:2c98%veth6f0b7dd"
    assert res["bootstrap_interfaces"] == ["enx785ee8a015a1"]
    assert res["nvls_available"] is True
    assert res["channels"]["ring"] == 16
    assert res["via"] == {"P2P/direct pointer": 4}
    assert res["transports"] == {"P2P/direct pointer": 4}
    assert res["gdrdma"] is None
    # No HCA shows up anywhere in this log: Socket is not called a fallback.
    assert res["hca_evidence"] == []
    assert res["fallback_to_socket"] is False


def test_tpgds_ofi_plugin_fails_then_internal_ib(fixture_text):
    res = parse_nccl_debug(fixture_text(TPGDS))
    assert res["hosts"] == ["tpgds-aihub0008"]
    assert res["nranks"] == 16
    assert res["nnodes"] == 2
    assert res["ofi_provider"] == "verbs;ofi_rxm"
    assert res["external_net_plugin"] == "AWS Libfabric"
    assert res["net_plugins_initialized"] == ["AWS Libfabric", "IB"]
    assert [f["line"] for f in res["net_plugin_failures"]][:2] == [3, 4]
    assert res["net_plugin"] == "IB"
    assert res["using_network"] == "IB"
    names = [d["name"] for d in res["net_devices"]]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
    assert {d["kind"] for d in res["net_devices"]} == {"RoCE"}
    assert res["oob_interfaces"] == ["enp25s0np0"]
    assert res["transports"] == {"NET/IB": 30, "P2P/IPC": 25}
    assert res["via"]["NET/IB/0/GDRDMA"] == 2
    assert res["via"]["NET/IB/7/GDRDMA"] == 4
    assert res["gdrdma"] is True
    assert res["dmabuf"] is True
    assert res["nvls_disabled_by_env"] is True
    assert res["mnnvl"] is False
    assert res["fallback_to_socket"] is False


def test_sharp_plugin_in_nccl_fixture(fixture_text):
    text = fixture_text("nccl/issue294-crusoe-2node-16rank-h100-ib-sharp-WARN-socket-family-33621-bootstrap-internal-error-PARTIAL-head.txt")
    res = parse_nccl_debug(text)
    assert res["net_plugin"] == "IBext_v6"
    assert res["using_network"] == "IB"
    assert res["external_net_plugin"] == "IBext_v6"
    assert res["net_plugin_library"] == "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    assert len(res["net_devices"]) == 8
    assert all(d["sharp"] for d in res["net_devices"])
    assert res["net_devices"][0]["name"] == "mlx5_1"
    assert res["bootstrap_interfaces"] == ["ens7"]
    assert res["cuda_driver_version"] == 12020
    assert res["warnings"][0]["line"] == 84


def test_multiline_warn_joined(fixture_text):
    text = fixture_text("nccl/dgx-spark-gb10-2node-roce-bond0-alltoall-WARN-multiline-completion-error-status12-abort-PARTIAL-tail.txt")
    res = parse_nccl_debug(text)
    assert len(res["warnings"]) == 1
    assert res["warnings"][0]["text"].endswith("localGid ::ffff:10.77.0.2 remoteGids::ffff:10.77.0.1 hca roceP2p1s0f0")
    assert res["hosts"] == ["gx10-9c8c"]


def test_registry_and_json(fixture_text):
    res = parse("nccl-debug", fixture_text(HARVARD))
    assert json.loads(json.dumps(res))["fallback_to_socket"] is True


def test_crlf_and_srun_prefix(fixture_text):
    # synthetic: CRLF line endings and an srun -l ' 1: ' prefix on every line
    text = fixture_text(A100)
    text = "\r\n".join(" 1: " + line for line in text.split("\n"))
    res = parse_nccl_debug(text)
    assert res["transports"] == {"NET/IB": 6}
    assert res["net_devices"][1]["name"] == "mlx5_2"
    assert res["hosts"] == ["n013"]


def test_tag_output_and_ansi(fixture_text):
    # synthetic: mpirun --tag-output prefix and colour escapes around WARN
    text = fixture_text(HARVARD).replace("NCCL WARN", "\x1b[31mNCCL WARN\x1b[0m")
    text = "\n".join("[1,0]<stderr>:" + line for line in text.split("\n"))
    res = parse_nccl_debug(text)
    assert [w["line"] for w in res["warnings"]] == [2, 3, 5]
    assert res["fallback_to_socket"] is True


def test_damaged_device_list_names_the_line(fixture_text):
    # synthetic: the NET/IB device list of line 13 cut inside the second device
    text = fixture_text(A100).replace("[1]mlx5_2:1/IB [RO]", "[1]mlx5_2:1/I")
    with pytest.raises(ParseError) as info:
        parse_nccl_debug(text)
    assert info.value.line == 13


def test_damaged_transport_names_the_line(fixture_text):
    # synthetic: recording truncated inside the first "[receive] via NET/IB/1/GDRDMA" line (line 53)
    text = fixture_text(A100)
    cut = text.index("[receive] via NET/IB/1/GDRDMA") + len("[receive] via NET/I")
    with pytest.raises(ParseError) as info:
        parse_nccl_debug(text[:cut])
    assert info.value.line == 53


def test_empty_and_no_nccl_lines():
    with pytest.raises(ParseError) as info:
        parse_nccl_debug("")
    assert info.value.line is None
    with pytest.raises(ParseError):
        parse_nccl_debug("# nThread 1 nGpus 1\nsome text\n")


def test_newer_transport_spellings(fixture_text):
    # synthetic: NCCL >= 2.19 spellings appended to a real log: PXN proxy rank, GDRDMA(PCI),
    # P2P/CUMEM/read, P2P/MNNVL/CE, a net plugin name with a space, legacy 'Ring' wording
    text = fixture_text(A100)
    text += (
        "n013:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 9[1] [send] via NET/IB/3(8)/GDRDMA(PCI)/Shared\n"
        "n013:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
        "n013:1:2 [0] NCCL INFO Channel 04/0 : 0[0] -> 1[1] via P2P/MNNVL/CE\n"
        "n013:1:2 [0] NCCL INFO Channel 05/0 : 0[0] -> 9[1] [send] via NET/AWS Libfabric/0/GDRDMA\n"
        "n013:1:2 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/Socket/0\n"
    )
    res = parse_nccl_debug(text)
    assert res["via"]["NET/IB/3(8)/GDRDMA(PCI)/Shared"] == 1
    assert res["transports"]["NET/IB"] == 7
    assert res["transports"]["P2P/CUMEM"] == 1
    assert res["transports"]["P2P/MNNVL"] == 1
    assert res["transports"]["NET/AWS Libfabric"] == 1
    assert res["transports"]["NET/Socket"] == 1

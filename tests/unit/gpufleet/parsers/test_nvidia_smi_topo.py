# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ``nvidia-smi topo -m`` / ``-mp`` / ``-p2p`` parsers.

Every expected value below was read by hand from the fixture file named in the test.
Synthetic inputs are built inline from a real fixture's text; each says what it changed.
"""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nvidia_smi_topo import parse_p2p_matrix, parse_topo_matrix
from gpufleet.parsers.registry import parse

T = "topo/"
AIHUB7 = T + "hgx-h100-12nic-numa-off-single-node0-aihub0007.txt"
AIHUB8 = T + "hgx-h100-12nic-numa-off-aihub0008-PASTE-DAMAGED.txt"
AZURE = T + "azure-ncads-a100-v4-style-4x-a100-pcie-nv12-bridge-pairs-4numa.txt"
WIN_1GPU = T + "exporter-capture-1gpu-WINDOWS-rtx2080super-610.62-empty-affinity-ansi-header.txt"
NV2 = T + "mlengineering-2gpu-nv2-bridge-no-legend.txt"
RTX4090 = T + "8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt"
P2P_OK = T + "mlengineering-8x-h100-topo-p2p-r-all-OK.txt"
P2P_CNS = T + "mlengineering-2x-l4-topo-p2p-r-CNS.txt"


def _raises(func, text):
    with pytest.raises(ParseError) as info:
        func(text)
    return info.value


def _by_name(entries):
    return {entry["name"]: entry for entry in entries}


# --------------------------------------------------------------------------- topo -m fixtures


def test_8gpu_pcie_no_affinity_columns_old_legend(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "8gpu-pcie-pix-phb-sys-NO-affinity-columns-old-legend.txt"))
    assert result["names"] == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"]
    assert result["columns"] == []
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "PIX"
    assert links["GPU0"]["GPU2"] == "PHB"
    assert links["GPU0"]["GPU4"] == "SYS"
    assert links["GPU7"]["GPU6"] == "PIX"
    assert links["GPU7"]["GPU7"] == "X"
    assert result["gpus"][0] == {"name": "GPU0", "cpu_affinity": None, "numa_affinity": None,
                                 "numa_nodes": None, "gpu_numa_id": None}
    assert result["nics"] == []
    assert result["legend"]["PIX"] == "Connection traversing a single PCIe switch"
    assert result["legend"]["X"] == "Self"
    assert result["format"] == "m"  # legend has the NV# line


def test_8x_rtx4090_all_sys_2nic_no_legend(fixture_text):
    result = parse_topo_matrix(fixture_text(RTX4090))
    assert len(result["names"]) == 10
    links = result["links"]
    assert links["GPU0"]["GPU7"] == "SYS"
    assert links["GPU6"]["NIC0"] == "PHB"
    assert links["GPU6"]["NIC1"] == "PHB"
    assert links["GPU7"]["NIC0"] == "SYS"
    assert links["NIC0"]["NIC1"] == "PIX"
    assert links["NIC1"]["NIC1"] == "X"
    gpus = _by_name(result["gpus"])
    assert gpus["GPU0"]["cpu_affinity"] == "0-55,112-167"
    assert gpus["GPU0"]["numa_affinity"] == "0"
    assert gpus["GPU0"]["gpu_numa_id"] is None
    assert gpus["GPU4"]["cpu_affinity"] == "56-111,168-223"
    assert gpus["GPU7"]["numa_nodes"] == [1]
    assert result["nics"] == [
        {"name": "NIC0", "device": None, "cpu_affinity": None, "numa_affinity": None},
        {"name": "NIC1", "device": None, "cpu_affinity": None, "numa_affinity": None},
    ]
    assert result["legend"] is None
    assert result["nic_legend"] is None
    assert result["format"] is None  # no command, no NV#, no legend: cannot tell -m from -mp


def test_alcf_polaris_header_lost_tab_and_spaces(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "alcf-polaris-4x-a100-nv4-2xmlx5-numa4-header-mangled.txt"))
    assert result["names"] == ["GPU0", "GPU1", "GPU2", "GPU3", "mlx5_0", "mlx5_1"]
    assert result["columns"] == ["CPU Affinity", "NUMA Affinity"]
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "NV4"
    assert links["GPU1"]["mlx5_1"] == "PHB"
    assert links["GPU3"]["mlx5_0"] == "PHB"
    assert links["mlx5_0"]["mlx5_1"] == "SYS"
    gpus = _by_name(result["gpus"])
    assert gpus["GPU0"]["cpu_affinity"] == "24-31,56-63"
    assert gpus["GPU0"]["numa_affinity"] == "3"
    assert gpus["GPU3"]["cpu_affinity"] == "0-7,32-39"
    assert gpus["GPU3"]["numa_nodes"] == [0]
    assert [nic["device"] for nic in result["nics"]] == ["mlx5_0", "mlx5_1"]
    assert result["nics"][1]["cpu_affinity"] is None


def test_azure_4x_a100_nv12_pairs_gpu_numa_id(fixture_text):
    result = parse_topo_matrix(fixture_text(AZURE))
    assert result["columns"] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "NV12"
    assert links["GPU2"]["GPU3"] == "NV12"
    assert links["GPU0"]["GPU2"] == "SYS"
    assert links["GPU3"]["GPU1"] == "SYS"
    assert [g["cpu_affinity"] for g in result["gpus"]] == ["0-23", "24-47", "48-71", "72-95"]
    assert [g["numa_affinity"] for g in result["gpus"]] == ["0", "1", "2", "3"]
    assert [g["gpu_numa_id"] for g in result["gpus"]] == [None, None, None, None]  # printed N/A
    assert result["nics"] == []


def test_cloudvm_fused_cell_ph0_115_raises_first_line(fixture_text):
    # Every GPU row has 'PH0-115' (PHB + CPU affinity fused); the first is line 2.
    error = _raises(parse_topo_matrix, fixture_text(T + "cloudvm-8x-a100-40gb-nv12-8nic-FUSED-cell-PH0-115-numa-range.txt"))
    assert error.line == 2
    assert "PH0-115" in str(error)


def test_cloudvm_repaired_copy_reads_numa_range(fixture_text):
    # Synthetic: the fused 'PH0-115' cells split back into 'PHB' + '0-115'.
    text = fixture_text(T + "cloudvm-8x-a100-40gb-nv12-8nic-FUSED-cell-PH0-115-numa-range.txt")
    result = parse_topo_matrix(text.replace("\tPH0-115\t", "\tPHB\t0-115\t"))
    gpu = result["gpus"][0]
    assert gpu["cpu_affinity"] == "0-115"
    assert gpu["numa_affinity"] == "0-3"
    assert gpu["numa_nodes"] == [0, 1, 2, 3]
    assert result["links"]["GPU0"]["NIC7"] == "PHB"
    assert result["nics"][7] == {"name": "NIC7", "device": "mlx5_7", "cpu_affinity": None, "numa_affinity": None}


def test_dell_8x_h100_topo_mp(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "dell-8x-h100-topo-mp-pcie-only-12nic-interleaved-cpu-affinity.txt"))
    assert result["format"] == "mp"  # no NV# in legend or cells
    assert len(result["gpus"]) == 8
    assert len(result["nics"]) == 12
    links = result["links"]
    assert [links["GPU0"]["NIC%d" % i] for i in range(3)] == ["PIX", "PIX", "PIX"]
    assert links["GPU0"]["NIC3"] == "NODE"
    assert links["GPU1"]["NIC3"] == "PIX"
    assert links["GPU0"]["GPU1"] == "NODE"
    assert links["GPU0"]["GPU4"] == "SYS"
    assert links["GPU7"]["NIC11"] == "PIX"
    assert links["NIC6"]["NIC8"] == "PIX"
    gpus = _by_name(result["gpus"])
    assert gpus["GPU0"]["cpu_affinity"] == "0,2,4,6,8,10"
    assert gpus["GPU4"]["cpu_affinity"] == "1,3,5,7,9,11"
    assert gpus["GPU4"]["numa_affinity"] == "1"
    assert result["nics"][11]["device"] == "mlx5_11"
    assert "NV#" not in result["legend"]
    assert result["legend"]["PIX"] == "Connection traversing at most a single PCIe bridge"


def test_dell_r760xa_1gpu_10nic_topo_mp_prompt_line(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "dell-r760xa-1xl40s-10nic-cx7-sriov-vfs-topo-mp-cpu-affinity-evenlist.txt"))
    assert result["format"] == "mp"  # from 'sh-5.1# nvidia-smi topo -mp'
    assert result["gpus"] == [{"name": "GPU0", "cpu_affinity": "0,2,4,6,8,10", "numa_affinity": "0",
                               "numa_nodes": [0], "gpu_numa_id": None}]
    assert len(result["nics"]) == 10
    links = result["links"]
    assert {links["GPU0"]["NIC%d" % i] for i in range(10)} == {"NODE"}
    assert links["NIC0"]["NIC1"] == "NODE"
    assert links["NIC1"]["NIC2"] == "PIX"
    assert links["NIC9"]["NIC8"] == "PIX"
    assert result["nics"][9]["device"] == "mlx5_9"
    assert result["nics"][0]["numa_affinity"] is None


def test_dgx_a100_nic_legend_no_gpu_numa_id(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "dgx-a100-nic0-9-nic-legend-no-gpu-numa-id.txt"))
    assert result["columns"] == ["CPU Affinity", "NUMA Affinity"]
    gpus = _by_name(result["gpus"])
    assert gpus["GPU0"]["cpu_affinity"] == "48-63,176-191"
    assert gpus["GPU0"]["numa_affinity"] == "3"
    assert gpus["GPU2"]["numa_affinity"] == "1"
    assert gpus["GPU4"]["cpu_affinity"] == "112-127,240-255"
    assert gpus["GPU4"]["numa_affinity"] == "7"
    assert gpus["GPU6"]["cpu_affinity"] == "80-95,208-223"
    assert gpus["GPU6"]["gpu_numa_id"] is None  # no such column
    links = result["links"]
    assert links["GPU0"]["NIC0"] == "PXB"
    assert links["GPU0"]["NIC2"] == "SYS"
    assert links["NIC8"]["NIC9"] == "PIX"
    assert len(result["nics"]) == 10
    assert result["nic_legend"]["NIC9"] == "mlx5_9"


@pytest.mark.parametrize(
    "name, cpus",
    [
        ("exporter-capture-1gpu-h100-80gb-hbm3-590-ansi-header.txt", "0-19"),
        ("exporter-capture-1gpu-l40s-595.80-ansi-header.txt", "0-7"),
        ("exporter-capture-1gpu-rtx4080super-595-ansi-header.txt", "0-15"),
    ],
)
def test_exporter_single_gpu_ansi_header(fixture_text, name, cpus):
    result = parse_topo_matrix(fixture_text(T + name))
    assert result["names"] == ["GPU0"]
    assert result["links"] == {"GPU0": {"GPU0": "X"}}
    assert result["columns"] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert result["gpus"] == [{"name": "GPU0", "cpu_affinity": cpus, "numa_affinity": "0",
                               "numa_nodes": [0], "gpu_numa_id": None}]
    assert result["nics"] == []


def test_exporter_windows_empty_affinity(fixture_text):
    result = parse_topo_matrix(fixture_text(WIN_1GPU))
    assert result["links"] == {"GPU0": {"GPU0": "X"}}
    assert result["gpus"] == [{"name": "GPU0", "cpu_affinity": None, "numa_affinity": None,
                               "numa_nodes": None, "gpu_numa_id": None}]
    assert result["legend"]["NV#"] == "Connection traversing a bonded set of # NVLinks"


def test_exporter_windows_error_instead_of_matrix(fixture_text):
    error = _raises(parse_topo_matrix, fixture_text(T + "exporter-capture-WINDOWS-rtx2080super-591.86-topo-m-unsupported-ERROR.txt"))
    assert error.line == 1
    assert "ERROR: Option -m is missing its value" in str(error)


def test_gengwg_dgx_a100_mlx5_names_in_header(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"))
    assert result["names"][8:] == ["mlx5_%d" % i for i in range(12)]
    assert [nic["device"] for nic in result["nics"]] == ["mlx5_%d" % i for i in range(12)]
    links = result["links"]
    assert links["GPU0"]["GPU7"] == "NV12"
    assert links["GPU0"]["mlx5_0"] == "PXB"
    assert links["GPU4"]["mlx5_6"] == "PXB"
    assert links["mlx5_4"]["mlx5_5"] == "PIX"
    assert links["mlx5_11"]["mlx5_10"] == "PIX"
    assert [g["numa_affinity"] for g in result["gpus"]] == ["3", "3", "1", "1", "7", "7", "5", "5"]
    assert result["gpus"][2]["cpu_affinity"] == "16-31,144-159"
    assert result["nic_legend"] is None


def test_aihub0008_paste_damaged_raises_at_fused_cell(fixture_text):
    # GPU5 row (line 7) has 'PIXNODE': two cells fused, one field too few.
    error = _raises(parse_topo_matrix, fixture_text(AIHUB8))
    assert error.line == 7
    assert "PIXNODE" in str(error)


def test_aihub0008_second_damage_is_found_too(fixture_text):
    # Synthetic: the first damage ('PIXNODE', line 7) split back into 'PIX\tNODE';
    # the NIC7 row (line 17) still has ' X NODE' fused.
    text = fixture_text(AIHUB8).replace("\tPIXNODE\t", "\tPIX\tNODE\t")
    error = _raises(parse_topo_matrix, text)
    assert error.line == 17
    assert "X NODE" in str(error)


def test_aihub0007_numa_off(fixture_text):
    result = parse_topo_matrix(fixture_text(AIHUB7))
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "NV18"
    assert links["GPU0"]["NIC0"] == "PIX"
    assert links["GPU3"]["NIC5"] == "PIX"
    assert links["GPU5"]["NIC7"] == "PIX"
    assert links["GPU7"]["NIC11"] == "PIX"
    assert links["NIC3"]["NIC4"] == "PIX"
    assert links["NIC9"]["NIC10"] == "PIX"
    gpu_nic = [links["GPU%d" % g]["NIC%d" % n] for g in range(8) for n in range(12)]
    assert gpu_nic.count("PIX") == 8
    assert gpu_nic.count("NODE") == 88
    assert {g["cpu_affinity"] for g in result["gpus"]} == {"0-191"}
    assert {g["numa_affinity"] for g in result["gpus"]} == {"0"}
    assert result["nics"][11] == {"name": "NIC11", "device": "mlx5_11", "cpu_affinity": None, "numa_affinity": None}


def test_mlengineering_2gpu_nv2_bridge(fixture_text):
    result = parse_topo_matrix(fixture_text(NV2))
    assert result["links"] == {"GPU0": {"GPU0": "X", "GPU1": "NV2"}, "GPU1": {"GPU0": "NV2", "GPU1": "X"}}
    assert result["gpus"][1]["cpu_affinity"] == "0-23"
    assert result["gpus"][1]["numa_affinity"] == "N/A"  # kept as printed
    assert result["gpus"][1]["numa_nodes"] is None


def test_mlengineering_2gpu_phb_consumer(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "mlengineering-2gpu-phb-consumer-no-legend.txt"))
    assert result["links"]["GPU0"]["GPU1"] == "PHB"
    assert result["links"]["GPU1"]["GPU0"] == "PHB"
    assert result["gpus"][0]["cpu_affinity"] == "0-11"
    assert result["gpus"][0]["numa_affinity"] == "N/A"
    assert result["legend"] is None


def test_mlengineering_8x_a100_compressed_spacing(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "mlengineering-8x-a100-nv12-COMPRESSED-spacing.txt"))
    assert result["format"] == "m"  # '$ nvidia-smi topo -m'
    assert result["links"]["GPU0"]["GPU7"] == "NV12"
    assert result["links"]["GPU5"]["GPU5"] == "X"
    gpus = _by_name(result["gpus"])
    assert gpus["GPU3"]["cpu_affinity"] == "0-23"
    assert gpus["GPU3"]["numa_affinity"] == "0"
    assert gpus["GPU4"]["cpu_affinity"] == "24-47"
    assert gpus["GPU4"]["numa_affinity"] == "1"


def test_mlengineering_8x_h100_nv18(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt"))
    links = result["links"]
    assert {links[a][b] for a in links for b in links[a] if a != b} == {"NV18"}
    gpus = _by_name(result["gpus"])
    assert gpus["GPU0"]["cpu_affinity"] == "0-51,104-155"
    assert gpus["GPU4"]["cpu_affinity"] == "52-103,156-207"
    assert gpus["GPU7"]["numa_affinity"] == "1"


def test_power8_minsky_soc_oldest_legend(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "power8-minsky-4x-p100-nv2-SOC-legend-cuda8.txt"))
    assert result["columns"] == ["CPU Affinity"]
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "NV2"
    assert links["GPU0"]["GPU2"] == "SOC"  # kept as printed
    assert links["mlx5_0"]["mlx5_1"] == "PIX"
    assert links["GPU3"]["mlx5_1"] == "SOC"
    assert result["gpus"][0]["cpu_affinity"] == "0-0,8-8,16-16,24-24,32-32,40-40,48-48,56-56,64-64,72-72"
    assert result["gpus"][2]["cpu_affinity"].startswith("80-80,88-88")
    assert result["gpus"][2]["numa_affinity"] is None  # no column
    assert result["legend"]["X"] == "Self"
    assert "SOC" in result["legend"]
    assert [nic["device"] for nic in result["nics"]] == ["mlx5_0", "mlx5_1"]


def test_princeton_1gpu_slurm_cpu_affinity_0(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "princeton-pli-1gpu-slurm-alloc-6nic-cpu-affinity-0.txt"))
    assert result["gpus"] == [{"name": "GPU0", "cpu_affinity": "0", "numa_affinity": "0",
                               "numa_nodes": [0], "gpu_numa_id": None}]
    links = result["links"]
    assert links["GPU0"]["NIC0"] == "PIX"
    assert links["GPU0"]["NIC1"] == "PIX"
    assert links["GPU0"]["NIC2"] == "SYS"
    assert links["NIC3"]["NIC4"] == "PIX"
    assert links["NIC5"]["NIC4"] == "SYS"
    assert [nic["device"] for nic in result["nics"]] == ["mlx5_%d" % i for i in range(6)]


def test_pytorch_dgx1_out_of_order_mlx5(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "pytorch-ddp-bench-dgx1-v100-hybrid-cubemesh-4xmlx5-old-legend.txt"))
    assert result["names"][8:] == ["mlx5_2", "mlx5_0", "mlx5_3", "mlx5_1"]
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "NV1"
    assert links["GPU0"]["GPU3"] == "NV2"
    assert links["GPU0"]["GPU5"] == "SYS"
    assert links["GPU0"]["mlx5_0"] == "PIX"
    assert links["GPU0"]["mlx5_1"] == "PHB"
    assert links["GPU4"]["mlx5_2"] == "PIX"
    assert links["mlx5_2"]["mlx5_3"] == "PHB"
    assert {g["cpu_affinity"] for g in result["gpus"]} == {"0-19,40-59"}
    assert result["gpus"][0]["numa_affinity"] is None  # no NUMA Affinity column


def test_tensorflow_k40m_soc_mlx4(fixture_text):
    result = parse_topo_matrix(fixture_text(T + "tensorflow-gdr-4x-k40m-phb-soc-mlx4-old-legend.txt"))
    links = result["links"]
    assert links["GPU0"]["GPU1"] == "PHB"
    assert links["GPU0"]["GPU2"] == "SOC"
    assert links["GPU2"]["mlx4_0"] == "PHB"
    assert links["mlx4_0"]["GPU0"] == "SOC"
    assert [g["cpu_affinity"] for g in result["gpus"]] == ["0-5", "0-5", "6-11", "6-11"]
    assert result["nics"] == [{"name": "mlx4_0", "device": "mlx4_0", "cpu_affinity": None, "numa_affinity": None}]


# --------------------------------------------------------------------------- topo -p2p fixtures


def test_p2p_8x_h100_all_ok(fixture_text):
    result = parse_p2p_matrix(fixture_text(P2P_OK))
    assert result["mode"] == "r"
    assert result["capability"] == "read"
    assert result["gpus"] == ["GPU%d" % i for i in range(8)]
    assert result["status"]["GPU0"]["GPU7"] == "OK"
    assert result["status"]["GPU3"]["GPU3"] == "X"
    assert result["ok"]["GPU5"]["GPU2"] is True
    assert result["ok"]["GPU5"]["GPU5"] is None
    assert result["all_ok"] is True
    assert result["legend"]["CNS"] == "Chipset not supported"
    assert "DR" not in result["legend"]  # older legend without 'Disabled by regkey'


def test_p2p_2x_l4_cns(fixture_text):
    result = parse_p2p_matrix(fixture_text(P2P_CNS))
    assert result["mode"] == "r"
    assert result["status"] == {"GPU0": {"GPU0": "X", "GPU1": "CNS"}, "GPU1": {"GPU0": "CNS", "GPU1": "X"}}
    assert result["ok"]["GPU0"]["GPU1"] is False
    assert result["all_ok"] is False
    assert result["legend"] is None


# --------------------------------------------------------------------------- registry


def test_registry_dispatches_both_kinds(fixture_text):
    assert parse("topo", fixture_text(NV2))["links"]["GPU0"]["GPU1"] == "NV2"
    assert parse("topo-p2p", fixture_text(P2P_CNS))["status"]["GPU1"]["GPU0"] == "CNS"
    error = _raises(lambda text: parse("topo", text), "")
    assert error.kind == "topo"


# --------------------------------------------------------------------------- synthetic variants


def test_crlf_reads_like_lf(fixture_text):
    text = fixture_text(AIHUB7)
    # Synthetic: LF line endings turned into CRLF.
    assert parse_topo_matrix(text.replace("\n", "\r\n")) == parse_topo_matrix(text)


def test_trailing_whitespace(fixture_text):
    text = fixture_text(NV2)
    # Synthetic: trailing spaces on every line.
    assert parse_topo_matrix("\n".join(line + "   " for line in text.split("\n"))) == parse_topo_matrix(text)


def test_space_expanded_tabs_read_the_same(fixture_text):
    text = fixture_text(AIHUB7)
    # Synthetic: tabs expanded to spaces (as a doc or terminal copy does).
    expanded = "\n".join(line.expandtabs() for line in text.split("\n"))
    assert "\t" not in expanded
    assert parse_topo_matrix(expanded) == parse_topo_matrix(text)


def test_space_expanded_blank_affinity_is_ambiguous(fixture_text):
    text = fixture_text(WIN_1GPU)
    # Synthetic: tabs expanded; the blank CPU/NUMA cells can no longer be located.
    expanded = "\n".join(line.expandtabs() for line in text.split("\n"))
    error = _raises(parse_topo_matrix, expanded)
    assert error.line == 2
    assert "cannot be located" in str(error)


def test_ansi_colour_in_cells(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: NV12 cells coloured with ANSI escapes.
    coloured = text.replace("NV12", "\x1b[1;32mNV12\x1b[0m")
    assert parse_topo_matrix(coloured) == parse_topo_matrix(text)


def test_srun_rank_prefix(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: `srun -l` prefix "0: " on every line.
    prefixed = "\n".join("0: " + line for line in text.split("\n"))
    assert parse_topo_matrix(prefixed) == parse_topo_matrix(text)


def test_mpirun_tag_output_prefix(fixture_text):
    text = fixture_text(P2P_OK)
    # Synthetic: `mpirun --tag-output` prefix on every line.
    prefixed = "\n".join("[1,0]<stdout>:" + line for line in text.split("\n"))
    assert parse_p2p_matrix(prefixed) == parse_p2p_matrix(text)


def test_two_ranks_interleaved_raise(fixture_text):
    lines = fixture_text(AZURE).split("\n")
    # Synthetic: line 3 carries rank 1's prefix, the others rank 0's.
    prefixed = ["%d: %s" % (1 if number == 3 else 0, line) for number, line in enumerate(lines, 1)]
    error = _raises(parse_topo_matrix, "\n".join(prefixed))
    assert error.line == 3


def test_root_prompt_line_before_header(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: a root prompt + command line in front.
    result = parse_topo_matrix("root@node17:~# nvidia-smi topo -m\n" + text)
    assert result["format"] == "m"
    assert result["links"]["GPU2"]["GPU3"] == "NV12"


def test_truncated_at_line_boundary_names_missing_row(fixture_text):
    text = fixture_text(AIHUB7)
    # Synthetic: only the first 5 lines kept (header + GPU0..GPU3); GPU4's row would be line 6.
    error = _raises(parse_topo_matrix, "\n".join(text.split("\n")[:5]))
    assert error.line == 6
    assert "GPU4" in str(error)


def test_truncated_mid_row_names_that_row(fixture_text):
    text = fixture_text(AIHUB7)
    lines = text.split("\n")
    # Synthetic: cut in the middle of line 5 (GPU3's row), after 10 cells.
    cut = "\n".join(lines[:4]) + "\n" + "\t".join(lines[4].split("\t")[:10])
    error = _raises(parse_topo_matrix, cut)
    assert error.line == 5


def test_truncated_in_affinity_cells(fixture_text):
    text = fixture_text(T + "mlengineering-8x-a100-nv12-COMPRESSED-spacing.txt")
    # Synthetic: text cut after GPU7's CPU affinity (line 10), its NUMA cell lost.
    cut = text[: text.index("24-47", text.index("\nGPU7")) + len("24-47")]
    error = _raises(parse_topo_matrix, cut)
    assert error.line == 10


def test_missing_nic_row_raises(fixture_text):
    text = fixture_text(RTX4090)
    # Synthetic: the last row (NIC1, line 11) removed.
    cut = "\n".join(text.split("\n")[:10])
    error = _raises(parse_topo_matrix, cut)
    assert error.line == 11


def test_row_name_not_matching_header(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: GPU3's row (line 5) renamed GPU9.
    error = _raises(parse_topo_matrix, text.replace("GPU3\tSYS", "GPU9\tSYS"))
    assert error.line == 5


def test_extra_row_not_square(fixture_text):
    text = fixture_text(NV2)
    # Synthetic: a third row GPU2 appended (line 4) that the header does not name.
    error = _raises(parse_topo_matrix, text + "GPU2    PHB      PHB     0-23            N/A\n")
    assert error.line == 4


def test_unknown_link_code(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: GPU1's first cell (line 3) changed from NV12 to NVXX.
    error = _raises(parse_topo_matrix, text.replace("GPU1\tNV12", "GPU1\tNVXX"))
    assert error.line == 3


def test_asymmetric_matrix(fixture_text):
    text = fixture_text(NV2)
    # Synthetic: GPU1->GPU0 (line 3) changed to NV4 while GPU0->GPU1 stays NV2.
    error = _raises(parse_topo_matrix, text.replace("GPU1    NV2", "GPU1    NV4"))
    assert error.line == 3


def test_x_off_diagonal(fixture_text):
    text = fixture_text(T + "mlengineering-2gpu-phb-consumer-no-legend.txt")
    # Synthetic: GPU1's row (line 3) shifted: 'X' where PHB was, PHB on the diagonal.
    error = _raises(parse_topo_matrix, text.replace("GPU1    PHB      X", "GPU1     X      PHB"))
    assert error.line == 3


def test_hostile_markup_in_affinity_cell(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: GPU2's CPU affinity (line 4) replaced by markup.
    error = _raises(parse_topo_matrix, text.replace("48-71", "<script>alert(1)</script>"))
    assert error.line == 4


def test_control_characters_in_cell(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: a NUL and BEL inside GPU0's SYS cell (line 2).
    error = _raises(parse_topo_matrix, text.replace("NV12\tSYS\tSYS\t0-23", "NV12\tS\x00Y\x07S\tSYS\t0-23"))
    assert error.line == 2


def test_nic_legend_entry_for_unknown_nic(fixture_text):
    text = fixture_text(T + "princeton-pli-1gpu-slurm-alloc-6nic-cpu-affinity-0.txt")
    lines = text.rstrip("\n").split("\n")
    # Synthetic: a NIC6 legend entry appended, but the matrix has NIC0..NIC5.
    error = _raises(parse_topo_matrix, "\n".join(lines + ["  NIC6: mlx5_6"]))
    assert error.line == len(lines) + 1


def test_nic_legend_partly_missing(fixture_text):
    text = fixture_text(T + "princeton-pli-1gpu-slurm-alloc-6nic-cpu-affinity-0.txt")
    # Synthetic: the NIC5 legend entry removed.
    result = parse_topo_matrix(text.replace("  NIC5: mlx5_5\n", ""))
    assert result["nics"][5]["device"] is None
    assert result["nics"][4]["device"] == "mlx5_4"


def test_code_defined_by_printed_legend_is_accepted(fixture_text):
    text = fixture_text(NV2)
    # Synthetic: a new code 'C2C' in the cells, defined by an added legend line.
    changed = text.replace("NV2", "C2C")
    error = _raises(parse_topo_matrix, changed)
    assert error.line == 2
    result = parse_topo_matrix(changed + "\nLegend:\n\n  X    = Self\n  C2C  = Chip to chip\n")
    assert result["links"]["GPU0"]["GPU1"] == "C2C"


def test_second_matrix_raises(fixture_text):
    text = fixture_text(NV2)
    # Synthetic: the same output twice (two unprefixed ranks); the second header is line 5.
    error = _raises(parse_topo_matrix, text + "\n" + text)
    assert error.line == 5


@pytest.mark.parametrize("text", ["", "\n\n", "   \r\n"])
def test_empty_input(text):
    error = _raises(parse_topo_matrix, text)
    assert error.line is None
    error = _raises(parse_p2p_matrix, text)
    assert error.line is None


def test_nvml_error_quoted():
    # Synthetic: a prompt line, then the NVML failure nvidia-smi prints instead of a matrix.
    text = "$ nvidia-smi topo -m\nFailed to initialize NVML: Driver/library version mismatch\n"
    error = _raises(parse_topo_matrix, text)
    assert error.line == 2
    assert "Driver/library version mismatch" in str(error)
    error = _raises(parse_p2p_matrix, text.replace("-m", "-p2p r"))
    assert error.line == 2


def test_prose_without_matrix():
    error = _raises(parse_topo_matrix, "hello\nworld\n")
    assert error.line == 1


# --------------------------------------------------------------------------- p2p variants


def test_p2p_tab_separated_and_crlf(fixture_text):
    text = fixture_text(P2P_CNS)
    # Synthetic: runs of spaces turned into tabs (as nvidia-smi prints), CRLF endings.
    tabbed = "\r\n".join("\t".join(line.split()) if "GPU" in line else line for line in text.split("\n"))
    result = parse_p2p_matrix(tabbed)
    assert result["status"]["GPU0"]["GPU1"] == "CNS"
    assert result["mode"] == "r"


def test_p2p_write_mode_and_newer_codes(fixture_text):
    text = fixture_text(P2P_CNS)
    # Synthetic: command changed to '-p2p w', cells changed to DR (disabled by regkey).
    result = parse_p2p_matrix(text.replace("p2p r", "p2p w").replace("CNS", "DR"))
    assert result["mode"] == "w"
    assert result["capability"] == "write"
    assert result["status"]["GPU1"]["GPU0"] == "DR"


def test_p2p_unknown_status_raises(fixture_text):
    text = fixture_text(P2P_OK)
    # Synthetic: GPU2->GPU5 (line 5) status 'MAYBE'.
    lines = text.split("\n")
    assert lines[4].startswith(" GPU2   OK      OK      X       OK      OK      OK")
    cells = lines[4].split()
    cells[6] = "MAYBE"
    lines[4] = "  ".join(cells)
    error = _raises(parse_p2p_matrix, "\n".join(lines))
    assert error.line == 5


def test_p2p_truncated(fixture_text):
    text = fixture_text(P2P_OK)
    # Synthetic: only the command, header and GPU0..GPU3 rows kept; GPU4's row would be line 7.
    error = _raises(parse_p2p_matrix, "\n".join(text.split("\n")[:6]))
    assert error.line == 7


def test_p2p_given_a_topo_matrix_raises(fixture_text):
    error = _raises(parse_p2p_matrix, fixture_text(NV2))
    assert error.line == 1


def test_p2p_given_a_topo_matrix_without_affinity_raises(fixture_text):
    # Its legend defines PIX/PHB/SYS, which must not make them p2p statuses.
    error = _raises(parse_p2p_matrix, fixture_text(T + "8gpu-pcie-pix-phb-sys-NO-affinity-columns-old-legend.txt"))
    assert error.line == 2


def test_topo_given_a_p2p_matrix_raises(fixture_text):
    error = _raises(parse_topo_matrix, fixture_text(P2P_OK))
    assert error.line == 3  # 'OK' is not a link code


def test_first_damaged_line_is_named(fixture_text):
    text = fixture_text(NV2)
    # Synthetic: GPU0's NUMA cell (line 2) garbled AND GPU1->GPU0 (line 3) made asymmetric.
    damaged = text.replace("0-23            N/A", "0-23            N/?", 1).replace("GPU1    NV2", "GPU1    NV4")
    error = _raises(parse_topo_matrix, damaged)
    assert error.line == 2


def test_gpu_numa_id_number(fixture_text):
    text = fixture_text(AZURE)
    # Synthetic: GPU NUMA ID cells 'N/A' replaced by node numbers 8..11 (as on Grace/MIG-style systems).
    for node in range(8, 12):
        text = text.replace("\t\tN/A", "\t\t%d" % node, 1)
    result = parse_topo_matrix(text)
    assert [g["gpu_numa_id"] for g in result["gpus"]] == [8, 9, 10, 11]
    assert result["gpus"][3]["numa_affinity"] == "3"


def test_tab_row_missing_affinity_cell(fixture_text):
    text = fixture_text(T + "tensorflow-gdr-4x-k40m-phb-soc-mlx4-old-legend.txt")
    # Synthetic: header gains a NUMA Affinity column the rows do not have (one field too few, line 2).
    error = _raises(parse_topo_matrix, text.replace("\tCPU Affinity", "\tCPU Affinity\tNUMA Affinity"))
    assert error.line == 2


# --------------------------------------------------------------------------- foreign lines


def test_foreign_lines_around_and_inside_the_matrix_are_listed_and_change_no_value(fixture_text):
    # EDITED: the DGX A100 recording (31 lines, TAB-separated) with a banner and a prompt before the header, a note
    # between the GPU7 and mlx5_0 rows, an elision inside the legend and a prompt after the end
    text = fixture_text(T + "gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt")
    edited = insert_lines(text, {
        1: "===== node-07 : nvidia-smi topo -m =====",
        2: "(venv) ubuntu@node-07:~$ nvidia-smi topo -m",
        12: "<-- GPU6 and GPU7 share mlx5_8 and mlx5_9",
        30: "  ...",
        36: "root@node-07:~# echo done",
    })
    result = parse_topo_matrix(edited)
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "===== node-07 : nvidia-smi topo -m =====", "why": "banner"},
        {"line": 2, "text": "(venv) ubuntu@node-07:~$ nvidia-smi topo -m", "why": "shell prompt"},
        {"line": 12, "text": "<-- GPU6 and GPU7 share mlx5_8 and mlx5_9", "why": "note"},
        {"line": 30, "text": "...", "why": "elision"},
        {"line": 36, "text": "root@node-07:~# echo done", "why": "shell prompt"},
    ]
    assert result == parse_topo_matrix(text)
    # the elision did not end the legend: its seven codes, NV# last, are all read
    assert list(result["legend"]) == ["X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#"]
    assert result["links"]["GPU7"]["mlx5_8"] == "PXB" and len(result["nics"]) == 12


def test_p2p_foreign_line_between_rows_is_listed(fixture_text):
    # the recording's line 1 is "$ nvidia-smi topo -p2p r"; EDITED: a note between the GPU3 and GPU4 rows (line 7)
    text = fixture_text(P2P_OK)
    result = parse_p2p_matrix(insert_lines(text, {7: "<-- second socket"}))
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "$ nvidia-smi topo -p2p r", "why": "shell prompt"},
        {"line": 7, "text": "<-- second socket", "why": "note"},
    ]
    assert result["mode"] == "r" and result["all_ok"] is True and len(result["gpus"]) == 8


def test_a_fused_cell_beside_a_foreign_line_is_still_refused_at_its_line(fixture_text):
    # the recording's line 7 (GPU5) has two cells fused into "PIXNODE"; EDITED: a note at line 3 moves it to line 8
    text = fixture_text(T + "hgx-h100-12nic-numa-off-aihub0008-PASTE-DAMAGED.txt")
    error = _raises(parse_topo_matrix, insert_lines(text, {3: "<-- GPU0 row above"}))
    assert error.line == 8 and "PIXNODE" in str(error)
    # EDITED: a row that no rule names foreign where GPU1's row is due is refused as before
    error = _raises(parse_topo_matrix, insert_lines(text, {3: "GPU0 again"}))
    assert error.line == 3 and "where the row of GPU1 was expected" in str(error)


def test_a_matrix_without_nic_rows_or_affinity_columns_says_so_in_notes(fixture_text):
    # the recordings: 8 PCIe GPUs with no NIC rows and no affinity columns; 8 H100 with CPU/NUMA columns, no NIC
    bare = parse_topo_matrix(fixture_text(T + "8gpu-pcie-pix-phb-sys-NO-affinity-columns-old-legend.txt"))
    assert bare["notes"] == [
        "no NIC rows: the GPU-to-NIC paths are not judged from this matrix",
        "no CPU Affinity column: the matrix gives no CPU list per GPU",
        "no NUMA Affinity column: the GPUs' NUMA placement is not judged from this matrix",
    ]
    assert bare["links"]["GPU0"]["GPU1"] == "PIX" and len(bare["gpus"]) == 8
    h100 = parse_topo_matrix(fixture_text(T + "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt"))
    assert h100["notes"] == ["no NIC rows: the GPU-to-NIC paths are not judged from this matrix"]
    assert h100["gpus"][4]["numa_affinity"] == "1"
    # the old driver's matrix with NIC rows and a CPU Affinity column but no NUMA Affinity
    tensorflow = parse_topo_matrix(fixture_text(T + "tensorflow-gdr-4x-k40m-phb-soc-mlx4-old-legend.txt"))
    assert tensorflow["notes"] == ["no NUMA Affinity column: the GPUs' NUMA placement is not judged from this matrix"]
    assert parse_topo_matrix(fixture_text(T + "gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"))["notes"] == []

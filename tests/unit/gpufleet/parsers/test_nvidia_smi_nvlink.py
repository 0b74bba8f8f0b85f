# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ``nvidia-smi nvlink -s`` / ``nvlink -e`` parsers against recorded outputs.

Expected values were read by hand from the fixture files, never produced by the parser.
"""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nvidia_smi_nvlink import parse_nvlink_errors, parse_nvlink_status
from gpufleet.parsers.registry import parse

SMI = "smi/"


def _links(gpu):
    return [(link["link"], link["active"], link["speed_gbs"]) for link in gpu["links"]]


# ---------------------------------------------------------------- nvlink -s, one fixture each


def test_status_azure_good_1gpu(fixture_text):
    result = parse_nvlink_status(fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-good-1gpu.txt"))
    assert len(result["gpus"]) == 1
    gpu = result["gpus"][0]
    assert gpu["index"] == 7
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu["uuid"] == "GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8"
    assert gpu["supported"] is True
    assert gpu["message"] is None
    assert _links(gpu) == [(n, True, 25.0) for n in range(12)]
    assert result["elided"] is False
    assert result["warnings"] == []


def test_status_azure_all_inactive(fixture_text):
    result = parse_nvlink_status(fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-all-inactive.txt"))
    gpu = result["gpus"][0]
    assert len(result["gpus"]) == 1
    assert gpu["index"] == 6
    assert gpu["uuid"] == "GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44"
    assert gpu["links"] == []
    assert gpu["supported"] is True
    assert gpu["message"] == "NVML: Unable to retrieve NVLink information as all links are inactive"


def test_status_cloudvm_prompt_line_and_12_links(fixture_text):
    # line 1 is "shadeform@brev-7hpnmoj9o:~$ nvidia-smi nvlink -s -i 0"
    result = parse_nvlink_status(fixture_text(SMI + "cloudvm-a100-40gb-nvlink-s-i0-12links-25gbs.txt"))
    assert len(result["gpus"]) == 1
    gpu = result["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB"
    assert gpu["uuid"] == "GPU-fde0a018-ad1a-bbec-ccf6-50a9f64bd178"
    assert _links(gpu) == [(n, True, 25.0) for n in range(12)]


def test_status_exporter_h100_18_links(fixture_text):
    result = parse_nvlink_status(fixture_text(SMI + "exporter-capture-nvlink-s-h100-590-18links.txt"))
    gpu = result["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert len(gpu["links"]) == 18
    assert gpu["links"][17] == {"link": 17, "active": True, "speed_gbs": 26.562}
    assert all(link["speed_gbs"] == 26.562 for link in gpu["links"])
    assert isinstance(gpu["links"][0]["speed_gbs"], float)


def test_status_exporter_mig_not_supported(fixture_text):
    result = parse_nvlink_status(fixture_text(SMI + "exporter-capture-nvlink-s-h100-MIG-not-supported.txt"))
    gpu = result["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["supported"] is False
    assert gpu["links"] == []
    assert gpu["message"] == "Nvlink queries are not supported for Devices in MIG mode"


def test_status_exporter_rtx2080super_all_inactive(fixture_text):
    result = parse_nvlink_status(fixture_text(SMI + "exporter-capture-nvlink-s-rtx2080super-all-links-inActive.txt"))
    gpu = result["gpus"][0]
    assert gpu["name"] == "NVIDIA GeForce RTX 2080 SUPER"
    assert gpu["supported"] is True
    assert gpu["links"] == []
    assert gpu["message"] == "NVML: Unable to retrieve Nvlink information as all links are inActive"


def test_status_gpud_8x_a100_no_trailing_newline(fixture_text):
    text = fixture_text(SMI + "gpud-nvlink-status-8x-a100-sxm4-80gb.txt")
    result = parse_nvlink_status(text)
    assert [gpu["index"] for gpu in result["gpus"]] == list(range(8))
    assert result["gpus"][0]["uuid"] == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert result["gpus"][3]["uuid"] == "GPU-6e4fbadc-10d9-a63a-8988-9a0d320ff1a0"
    assert result["gpus"][7]["uuid"] == "GPU-754035b4-4708-efcd-b261-623aea38bcad"
    for gpu in result["gpus"]:
        assert _links(gpu) == [(n, True, 25.0) for n in range(12)]
    assert sum(len(gpu["links"]) for gpu in result["gpus"]) == 96


def test_status_mlengineering_elided(fixture_text):
    # PARTIAL: the author replaced links 1-16 with "[...]"; nothing is invented for them
    result = parse_nvlink_status(fixture_text(SMI + "mlengineering-h100-nvlink-status-PARTIAL-elided.txt"))
    gpu = result["gpus"][0]
    assert result["elided"] is True
    assert gpu["elided"] is True
    assert gpu["uuid"] == "GPU-abcdefab-cdef-abdc-abcd-abababababab"
    assert _links(gpu) == [(0, True, 26.562), (17, True, 26.562)]


def test_status_siboehm_3x_a6000_bridged_and_inactive(fixture_text):
    result = parse_nvlink_status(fixture_text(SMI + "siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt"))
    assert [gpu["index"] for gpu in result["gpus"]] == [0, 1, 2]
    assert result["gpus"][0]["uuid"] == "GPU-5baec991-de63-c196-1766-04c38407e133"
    assert _links(result["gpus"][0]) == [(n, True, 14.062) for n in range(4)]
    assert _links(result["gpus"][1]) == [(n, True, 14.062) for n in range(4)]
    gpu2 = result["gpus"][2]
    assert gpu2["uuid"] == "GPU-02c05ee3-bdb5-aac7-f9e8-a4c8f3f725b3"
    assert gpu2["links"] == []
    assert gpu2["supported"] is True
    assert gpu2["message"] == "NVML: Unable to retrieve NVLink information as all links are inActive"


# ---------------------------------------------------------------- nvlink -e, one fixture each


def test_errors_cloudvm_all_zero_with_banner(fixture_text):
    # line 1 is the author's "=== GPU 0 NVLink Errors ===" echo; PARTIAL = only GPU 0 kept
    result = parse_nvlink_errors(fixture_text(SMI + "cloudvm-a100-40gb-nvlink-e-all-zero-PARTIAL-gpu0.txt"))
    assert len(result["gpus"]) == 1
    gpu = result["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB"
    assert gpu["uuid"] == "GPU-fde0a018-ad1a-bbec-ccf6-50a9f64bd178"
    assert [link["link"] for link in gpu["links"]] == list(range(12))
    for link in gpu["links"]:
        assert link == {"link": link["link"], "replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}
    assert result["elided"] is False


def test_errors_mlengineering_elided(fixture_text):
    result = parse_nvlink_errors(fixture_text(SMI + "mlengineering-h100-nvlink-e-PARTIAL-elided.txt"))
    gpu = result["gpus"][0]
    assert result["elided"] is True
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert [link["link"] for link in gpu["links"]] == [0, 1, 17]
    assert gpu["links"][2] == {"link": 17, "replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}


def test_registry_reaches_both_kinds(fixture_text):
    status = parse("nvlink-status", fixture_text(SMI + "siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt"))
    errors = parse("nvlink-errors", fixture_text(SMI + "mlengineering-h100-nvlink-e-PARTIAL-elided.txt"))
    assert len(status["gpus"]) == 3
    assert errors["gpus"][0]["links"][1]["link"] == 1
    json.dumps(status)
    json.dumps(errors)


# ---------------------------------------------------------------- synthetic variants


def test_status_crlf_ansi_and_trailing_whitespace(fixture_text):
    # synthetic: the siboehm recording with CRLF endings, trailing blanks and a bold GPU line
    text = fixture_text(SMI + "siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt")
    text = text.replace("GPU 1:", "\x1b[1mGPU 1:").replace("\n", "  \r\n")
    result = parse_nvlink_status(text)
    assert result["gpus"][1]["index"] == 1
    assert result["gpus"][1]["name"] == "NVIDIA RTX A6000"
    assert _links(result["gpus"][1]) == [(n, True, 14.062) for n in range(4)]
    assert result["gpus"][2]["message"].endswith("all links are inActive")


def test_status_srun_prefixes_two_ranks_interleaved(fixture_text):
    # synthetic: two nodes' outputs under "srun -l", lines interleaved
    one = fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-good-1gpu.txt").split("\n")
    two = fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-all-inactive.txt").split("\n")
    lines = []
    for i in range(max(len(one), len(two))):
        if i < len(one) and one[i]:
            lines.append("0: " + one[i])
        if i < len(two) and two[i]:
            lines.append("1: " + two[i])
    result = parse_nvlink_status("\n".join(lines))
    assert [(gpu["rank"], gpu["index"]) for gpu in result["gpus"]] == [("0", 7), ("1", 6)]
    assert len(result["gpus"][0]["links"]) == 12
    assert result["gpus"][1]["links"] == []


def test_errors_mpirun_tag_output_prefix(fixture_text):
    # synthetic: mpirun --tag-output prefix on every line of the mlengineering -e paste
    text = fixture_text(SMI + "mlengineering-h100-nvlink-e-PARTIAL-elided.txt")
    text = "\n".join("[1,0]<stdout>:" + line for line in text.split("\n"))
    result = parse_nvlink_errors(text)
    assert result["gpus"][0]["rank"] == "1,0"
    assert [link["link"] for link in result["gpus"][0]["links"]] == [0, 1, 17]


def test_status_inactive_link_and_hostile_name(fixture_text):
    # synthetic: link 3 printed as <inactive>, markup in the GPU name stays a plain string
    text = fixture_text(SMI + "siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt")
    text = text.replace("\t Link 3: 14.062 GB/s", "\t Link 3: <inactive>", 1)
    text = text.replace("NVIDIA RTX A6000 (UUID: GPU-5baec", "<script>alert(1)</script> (UUID: GPU-5baec")
    result = parse_nvlink_status(text)
    gpu = result["gpus"][0]
    assert gpu["name"] == "<script>alert(1)</script>"
    assert gpu["links"][3] == {"link": 3, "active": False, "speed_gbs": None}
    assert result["gpus"][1]["links"][3]["active"] is True


def test_errors_saturated_counter_kept_and_other_counters(fixture_text):
    # synthetic: a saturated CRC counter, an extra counter name, and an N/A value
    text = fixture_text(SMI + "mlengineering-h100-nvlink-e-PARTIAL-elided.txt")
    text = text.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 4294967295")
    text = text.replace("Link 0: Replay Errors: 0", "Link 0: Replay Errors: N/A")
    result = parse_nvlink_errors(text)
    links = result["gpus"][0]["links"]
    assert links[0]["replay_errors"] is None
    assert links[1]["crc_errors"] == 4294967295
    assert links[2]["crc_errors"] == 0
    # link 17 gains a counter that links 0 and 1 lack: link 0 (lines 3-5) is reported as cut off
    with pytest.raises(ParseError) as info:
        parse_nvlink_errors(text + "\n Link 17: FEC Errors - 0: 1")
    assert info.value.line == 5


def test_errors_extra_counter_name_snake_case(fixture_text):
    # synthetic: every link of the cloudvm output gets a "FEC Errors - 0" counter
    text = fixture_text(SMI + "cloudvm-a100-40gb-nvlink-e-all-zero-PARTIAL-gpu0.txt")
    lines = []
    for line in text.split("\n"):
        lines.append(line)
        if "CRC Errors" in line:
            lines.append(line.replace("CRC Errors: 0", "FEC Errors - 0: 12"))
    result = parse_nvlink_errors("\n".join(lines))
    assert result["gpus"][0]["links"][11]["fec_errors_0"] == 12


# ---------------------------------------------------------------- damaged input -> ParseError(line)


def test_empty_input_raises():
    with pytest.raises(ParseError):
        parse_nvlink_status("")
    with pytest.raises(ParseError):
        parse_nvlink_errors("  \n\n")


def test_driver_error_text_raises_quoting_it():
    text = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(text)
    assert info.value.line == 1
    assert "couldn't communicate" in str(info.value)


def test_status_truncated_mid_line(fixture_text):
    # synthetic: the gpud recording cut inside line 20 ("         Link 5: 25 GB/s" of GPU 1)
    lines = fixture_text(SMI + "gpud-nvlink-status-8x-a100-sxm4-80gb.txt").split("\n")
    assert lines[19] == "         Link 5: 25 GB/s"
    text = "\n".join(lines[:19]) + "\n" + lines[19][:18]  # "         Link 5: 2"
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(text)
    assert info.value.line == 20


def test_status_truncated_gpu_line(fixture_text):
    # synthetic: cut inside the UUID of "GPU 1: ..." (line 14)
    lines = fixture_text(SMI + "gpud-nvlink-status-8x-a100-sxm4-80gb.txt").split("\n")
    text = "\n".join(lines[:13]) + "\n" + lines[13][:50]
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(text)
    assert info.value.line == 14


def test_status_duplicate_link(fixture_text):
    # synthetic: line 3 of the azure file ("Link 1") renumbered as "Link 0"
    text = fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-good-1gpu.txt").replace("Link 1:", "Link 0:", 1)
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(text)
    assert info.value.line == 3


def test_status_given_errors_output(fixture_text):
    # the -e output is not -s output: line 3 is "Link 0: Replay Errors: 0"
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(fixture_text(SMI + "mlengineering-h100-nvlink-e-PARTIAL-elided.txt"))
    assert info.value.line == 3


def test_errors_given_status_output(fixture_text):
    # line 2 of the azure -s file is "\t Link 0: 25 GB/s": no counter name
    with pytest.raises(ParseError) as info:
        parse_nvlink_errors(fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-good-1gpu.txt"))
    assert info.value.line == 2


def test_errors_cut_after_a_full_line(fixture_text):
    # synthetic: the cloudvm -e output stopped after line 48 ("Link 11: Recovery Errors: 0";
    # line 1 banner, line 2 GPU, link k on lines 3+4k..5+4k)
    lines = fixture_text(SMI + "cloudvm-a100-40gb-nvlink-e-all-zero-PARTIAL-gpu0.txt").split("\n")
    assert lines[47] == "\t Link 11: Recovery Errors: 0"
    with pytest.raises(ParseError) as info:
        parse_nvlink_errors("\n".join(lines[:48]))
    assert info.value.line == 48


def test_errors_counter_not_a_number(fixture_text):
    # synthetic: line 4 ("Link 0: Recovery Errors: 0") value damaged
    text = fixture_text(SMI + "mlengineering-h100-nvlink-e-PARTIAL-elided.txt").replace("Link 0: Recovery Errors: 0", "Link 0: Recovery Errors: 0x?")
    with pytest.raises(ParseError) as info:
        parse_nvlink_errors(text)
    assert info.value.line == 4


def test_status_text_among_links(fixture_text):
    # synthetic: a stray message inserted after line 3 of the azure file
    lines = fixture_text(SMI + "azure-nvlink-status-a100-sxm4-80gb-good-1gpu.txt").split("\n")
    lines.insert(3, "NVML: Unknown Error")
    with pytest.raises(ParseError) as info:
        parse_nvlink_status("\n".join(lines))
    assert info.value.line == 4


# ---------------------------------------------------------------- foreign lines


def test_status_foreign_lines_are_listed_and_change_no_value(fixture_text):
    # EDITED: the 8x A100 recording (103 lines) with bash -x's echo first, a note after GPU 0's link 5, a banner
    # before GPU 1 and a prompt after the end
    text = fixture_text(SMI + "gpud-nvlink-status-8x-a100-sxm4-80gb.txt")
    edited = insert_lines(text, {
        1: "+ nvidia-smi nvlink -s",
        9: "         <-- link 5 flapped yesterday",
        16: "===== node-07 : GPU 1 =====",
        107: "(venv) ubuntu@node-07:~$ nvidia-smi nvlink -e",
    })
    result = parse_nvlink_status(edited)
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "+ nvidia-smi nvlink -s", "why": "echoed command"},
        {"line": 9, "text": "<-- link 5 flapped yesterday", "why": "note"},
        {"line": 16, "text": "===== node-07 : GPU 1 =====", "why": "banner"},
        {"line": 107, "text": "(venv) ubuntu@node-07:~$ nvidia-smi nvlink -e", "why": "shell prompt"},
    ]
    assert result == parse_nvlink_status(text)
    assert [gpu["index"] for gpu in result["gpus"]] == list(range(8))
    assert _links(result["gpus"][0]) == [(n, True, 25.0) for n in range(12)]


def test_errors_banner_and_note_are_listed(fixture_text):
    # the recording's line 1 is a script's "=== GPU 0 NVLink Errors ==="; EDITED: a note after link 1's counters
    text = fixture_text(SMI + "cloudvm-a100-40gb-nvlink-e-all-zero-PARTIAL-gpu0.txt")
    result = parse_nvlink_errors(insert_lines(text, {10: "<-- all zero since the reset"}))
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "=== GPU 0 NVLink Errors ===", "why": "banner"},
        {"line": 10, "text": "<-- all zero since the reset", "why": "note"},
    ]
    unedited = parse_nvlink_errors(text)
    assert unedited.pop("ignored_lines") == [{"line": 1, "text": "=== GPU 0 NVLink Errors ===", "why": "banner"}]
    assert result == unedited
    assert result["gpus"][0]["links"][1] == {"link": 1, "replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}


def test_damage_beside_foreign_lines_is_still_refused_at_its_line(fixture_text):
    # EDITED: a banner first, and GPU 0's "Link 3: 25 GB/s" (line 5, 6 with the banner) cut to "25 GB"
    text = fixture_text(SMI + "gpud-nvlink-status-8x-a100-sxm4-80gb.txt").replace("Link 3: 25 GB/s", "Link 3: 25 GB", 1)
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(insert_lines(text, {1: "===== node-07 ====="}))
    assert info.value.line == 6 and "GB/s" in str(info.value)
    # EDITED: text among the links that no rule names foreign is still refused (line 4)
    with pytest.raises(ParseError) as info:
        parse_nvlink_status(insert_lines(fixture_text(SMI + "gpud-nvlink-status-8x-a100-sxm4-80gb.txt"),
                                         {4: "flapping"}))
    assert info.value.line == 4 and "among the links" in str(info.value)

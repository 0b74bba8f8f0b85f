# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""compute_capability: the GPU -> CUDA compute capability table the nccl_tests and burn_in builds use.
Expected values from NVIDIA's table (https://developer.nvidia.com/cuda-gpus), written by hand."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.acceptance.plugins.filter.compute_capability import compute_capability


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA A100-SXM4-80GB", "80"),
    ("NVIDIA A800 80GB PCIe", "80"),
    ("NVIDIA A30", "80"),
    ("NVIDIA A10G", "86"),
    ("NVIDIA A10", "86"),
    ("NVIDIA A40", "86"),
    ("NVIDIA L40S", "89"),
    ("NVIDIA L4", "89"),
    ("NVIDIA GeForce RTX 4090", "89"),
    ("NVIDIA H100 80GB HBM3", "90"),
    ("NVIDIA H200", "90"),
    ("NVIDIA GH200 480GB", "90"),
    ("NVIDIA B200", "100"),
    ("NVIDIA GB200", "100"),
])
def test_product_names(name, expected):
    assert compute_capability(name) == expected
    assert compute_capability({"name": name, "product_architecture": None}) == expected


def test_the_name_wins_over_the_architecture():
    # an A100 is Ampere 8.0 whatever the architecture field says
    assert compute_capability({"name": "NVIDIA A100-PCIE-40GB", "product_architecture": "Hopper"}) == "80"


def test_architectures_that_name_one_capability():
    assert compute_capability({"name": "NVIDIA Graphics Device", "product_architecture": "Hopper"}) == "90"
    assert compute_capability({"name": "NVIDIA Graphics Device", "product_architecture": "Ada Lovelace"}) == "89"
    # Ampere is 8.0, 8.6 or 8.7: not guessed
    assert compute_capability({"name": "NVIDIA Graphics Device", "product_architecture": "Ampere"}) is None


@pytest.mark.parametrize("gpu", [
    {"name": "NVIDIA TITAN V", "product_architecture": "Volta"},  # 7.0: not in the table
    {"name": "NVIDIA B300", "product_architecture": "Blackwell"},  # 10.3: not guessed
    {"name": "NVIDIA RTX 4000 Ada Generation"},  # no "RTX 40[5-9]0" match, no architecture
    {"name": "NVIDIA A1000"},  # A10 only as a whole word
    {},
    "",
])
def test_unknown_gpus_give_none(gpu):
    assert compute_capability(gpu) is None


def test_a_bad_input_says_what_it_got():
    with pytest.raises(AnsibleFilterError, match="the input must be a GPU [(]dict[)] or a product name, got int"):
        compute_capability(90)

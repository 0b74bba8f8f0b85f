# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``compute_capability``: the CUDA compute capability (SASS target sm_XY) of a GPU from its facts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: compute_capability
short_description: The CUDA compute capability of a GPU, from its product name or architecture
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - The compute capability as the digits of its SASS target (C(sm_90) gives C("90")), the form C(NVCC_GENCODE),
    gpu-burn's C(COMPUTE) and the roles' C(nccl_tests_compute_capabilities) / C(burn_in_gpu_burn_compute) take.
  - The product name is matched first (first row wins) - A100/A800/A30 8.0; A10/A10G/A40/A16/A2 8.6; L40/L40S/L4 and
    the GeForce RTX 40 series (Ada) 8.9; H100/H200/H800/GH200 9.0; B100/B200/GB200 10.0 - then the architecture, for the
    architectures that name one capability (Hopper 9.0, Ada Lovelace 8.9; Ampere is 8.0, 8.6 or 8.7).
  - Sources - NVIDIA, "CUDA GPUs - Compute Capability" (U(https://developer.nvidia.com/cuda-gpus)) and the CUDA C++
    Programming Guide, "Compute Capabilities".
  - Anything else (B300 is 10.3, RTX PRO Blackwell 12.0, Volta 7.0, ...) is not guessed - the filter returns C(none)
    and the caller says which GPU it does not know.
options:
  _input:
    description:
      - One GPU of C(gpufleet_gpu.gpus) (fact of M(gpufleet.acceptance.gpu_facts)) - its C(name) and
        C(product_architecture) are read - or a product name alone.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The compute capability of each GPU of this node
  ansible.builtin.debug:
    msg: "{{ gpufleet_gpu.gpus | map('gpufleet.acceptance.compute_capability') | list }}"

- name: By product name
  ansible.builtin.debug:
    msg: "{{ 'NVIDIA H100 80GB HBM3' | gpufleet.acceptance.compute_capability }}"  # "90"
"""

RETURN = r"""
_value:
  description:
    - The capability's digits (C("80"), C("86"), C("89"), C("90"), C("100")).
    - C(none) for a GPU the table does not know.
  type: str
"""

# (product-name pattern, capability), first match wins; searched anywhere in the name, case as NVIDIA writes it.
BY_NAME: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), capability) for pattern, capability in (
    (r"\bA100\b|\bA800\b|\bA30\b", "80"),
    (r"\bA10G?\b|\bA40\b|\bA16\b|\bA2\b", "86"),
    (r"\bL40S?\b|\bL4\b|\bRTX 40[5-9]0\b", "89"),
    (r"\bGH200\b|\bH100\b|\bH200\b|\bH800\b", "90"),
    (r"\bGB200\b|\bB200\b|\bB100\b", "100"),
))
# Architectures that name ONE compute capability (Ampere is 8.0, 8.6 or 8.7; Blackwell 10.x or 12.x).
BY_ARCHITECTURE: dict[str, str] = {"Hopper": "90", "Ada Lovelace": "89"}


def compute_capability(gpu: Any) -> Optional[str]:
    """The capability of ``gpu`` (a gpu_facts GPU or a product name): by name first, then by architecture."""
    if isinstance(gpu, Mapping):
        name, architecture = gpu.get("name"), gpu.get("product_architecture")
    elif isinstance(gpu, str):
        name, architecture = gpu, None
    else:
        raise AnsibleFilterError(
            "compute_capability: the input must be a GPU (dict) or a product name, got %s" % type(gpu).__name__)
    name_text = str(name) if name else ""
    for pattern, capability in BY_NAME:
        if pattern.search(name_text):
            return capability
    return BY_ARCHITECTURE.get(str(architecture)) if architecture else None


class FilterModule:
    """gpufleet.acceptance.compute_capability"""

    def filters(self) -> dict[str, Any]:
        return {"compute_capability": compute_capability}

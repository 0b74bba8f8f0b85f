#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Collect every GPU's identity, health and NVLink state, and the lspci GPU count
description:
  - Runs, in one call and each as an argv list with C(LC_ALL=C) and a timeout, C(lspci -nn),
    C(nvidia-smi -q -x), C(nvidia-smi -q), C(nvidia-smi nvlink -s) and C(nvidia-smi nvlink -e)
    on the node and returns their raw output; the action plugin of the same name parses them on
    the controller.
  - The XML is the primary source; the text fills what the XML lacks (for example the Fabric
    state on older drivers). When both are collected and they list a different number of GPUs
    or different PCI bus ids, the task fails. C(nvlink -s) and C(nvlink -e) listing GPUs that
    C(-q) does not list fails the task too.
  - Per GPU the facts give index, name, UUID, serial, PCI bus id, board part number, VBIOS,
    memory, ECC mode and error counts, retired pages and row remapping, temperature, power,
    clocks and their maximums, clock event (throttle) reasons, PCIe generation and width,
    persistence and MIG mode, compute processes, Fabric state, and the NVLink links with
    their speed and error counters. C(lspci_gpu_count) is the number of NVIDIA display/3D
    controllers (classes 0300 and 0302, not NVSwitch bridges) on the PCI bus, and
    C(missing_from_nvml) how many of them nvidia-smi does not list, so a GPU that fell off
    the bus shows.
  - Nothing is changed on the node.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  nvidia_smi_path:
    description:
      - Name or path of C(nvidia-smi) on the node.
    type: str
    default: nvidia-smi
  lspci_path:
    description:
      - Name or path of C(lspci) on the node. When it is not there, C(lspci_gpu_count) is
        null and a warning says so; the GPU facts are still gathered.
    type: str
    default: lspci
  timeout:
    description:
      - Seconds each command may run before it is stopped.
    type: int
    default: 60
  query_formats:
    description:
      - Renderings of C(nvidia-smi -q) to collect. C(xml) is the primary source when
        collected; C(text) fills its gaps and is cross-checked against it. Either alone is
        enough (both parsers return the same keys); dropping one saves a full NVML query.
    type: list
    elements: str
    choices: [xml, text]
    default: [xml, text]
  nvlink:
    description:
      - Also run C(nvidia-smi nvlink -s) and C(nvidia-smi nvlink -e). Set to false on
        PCIe-only fleets; each GPU's C(nvlink) is then null.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
  - gpufleet.acceptance.fact_phase
attributes:
  facts:
    support: full
    description: Sets C(gpufleet_gpu).
notes:
  - Needs the NVIDIA driver on the node. Parsing happens on the controller, so the node needs
    only its OS Python (3.8 or later).
  - C(lspci -nn) is used because it prints both the numeric class and vendor:device codes
    (reliable matching) and the names (for people reading the raw output).
  - On GPUs without NVLink, or in MIG mode, C(nvidia-smi nvlink) prints a message instead of
    links; that message becomes the GPU's C(nvlink.message), it is not a failure.
seealso:
  - module: gpufleet.acceptance.gpu_topology_facts
"""

EXAMPLES = r"""
- name: Read the GPUs of every rented node
  gpufleet.acceptance.gpu_facts:

- name: PCIe-only node, driver container's nvidia-smi, XML only
  gpufleet.acceptance.gpu_facts:
    nvidia_smi_path: /run/nvidia/driver/usr/bin/nvidia-smi
    query_formats: [xml]
    nvlink: false
    timeout: 120

- name: Fail when a GPU on the PCI bus is missing from nvidia-smi
  ansible.builtin.assert:
    that:
      - gpufleet_gpu.missing_from_nvml == 0
    fail_msg: "{{ gpufleet_gpu.lspci_only_bus_ids }} are on the bus but not in nvidia-smi"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the action plugin.
  returned: success
  type: complex
  contains:
    gpufleet_gpu:
      description: The node's GPUs, merged from all collected outputs, and what follows from them.
      returned: success
      type: complex
      contains:
        driver_version:
          description: Driver version as nvidia-smi printed it.
          type: str
          sample: "535.183.01"
        cuda_version:
          description: CUDA version the driver supports, as printed.
          type: str
          sample: "12.2"
        timestamp:
          description: Timestamp nvidia-smi printed.
          type: str
          sample: "Fri Aug  4 11:44:30 2023"
        attached_gpus:
          description: The C(Attached GPUs) count nvidia-smi printed.
          type: int
          sample: 8
        gpu_count:
          description: GPUs listed by nvidia-smi (sections printed); the count NVML sees.
          type: int
          sample: 8
        lspci_gpu_count:
          description: NVIDIA GPUs (class 0300/0302, vendor 10de) in C(lspci); null when lspci is absent.
          type: int
          sample: 8
        missing_from_nvml:
          description: C(lspci_gpu_count) minus C(gpu_count); above 0 means GPUs on the bus nvidia-smi does not see.
          type: int
          sample: 0
        lspci_gpus:
          description: Normalised PCI addresses (C(dddd:bb:dd.f)) of the NVIDIA GPUs lspci lists.
          type: list
          elements: str
          sample: ["0000:19:00.0"]
        lspci_only_bus_ids:
          description: GPUs lspci lists that nvidia-smi does not.
          type: list
          elements: str
          sample: []
        nvml_only_bus_ids:
          description: GPUs nvidia-smi lists that lspci does not list as NVIDIA GPUs.
          type: list
          elements: str
          sample: []
        sources:
          description: Which outputs were parsed and used.
          type: dict
          sample: {"xml": true, "text": true, "nvlink_status": true, "nvlink_errors": true, "lspci": true}
        gpus:
          description:
            - One dict per GPU in nvidia-smi order with the parsers' shared keys (null when not
              printed or N/A), C(filled_from_text) (keys the text supplied), C(active_clock_event_reasons)
              and C(nvlink) (null when not collected) with C(supported), C(message), C(links)
              (C(link), C(active), C(speed_gbs) and every C(nvlink -e) counter), C(elided), C(errors_message).
            - See docs/facts/gpu_facts.md for every key.
          type: list
          elements: dict
          sample:
            - index: 0
              name: "NVIDIA H100 80GB HBM3"
              pci_bus_id: "00000000:19:00.0"
              uuid: "GPU-..."
              memory_total_mib: 81559
              ecc_mode_current: true
              clock_event_reasons: {"idle": false, "sw_power_cap": true}
              nvlink: {"supported": true, "message": null, "links": [{"link": 0, "active": true, "speed_gbs": 26.562, "replay_errors": 0}]}
        summary:
          description: Counts, distinct values and judgement-ready lists of GPU indexes.
          type: dict
          sample:
            gpu_count: 8
            names: ["NVIDIA H100 80GB HBM3"]
            memory_total_mib: [81559]
            ecc_enabled_all: true
            retired_pages_pending_any: null
            remapped_rows_pending_any: false
            remapped_rows_failure_any: false
            throttled_gpus: []
            nvlink_inactive_links: []
        warnings:
          description: Disagreements and missing tools that did not stop the gathering.
          type: list
          elements: str
          sample: ["nvidia-smi -q -x: attached_gpus is 4 but the output has 1 <gpu> element(s); indexes are positions in this output"]
raw:
  description: What the node printed, for the results directory and dispute bundles.
  returned: always
  type: dict
  contains:
    lspci:
      description: C(cmd), C(rc), C(stdout), C(stderr), C(duration_s), C(error) of C(lspci -nn).
      type: dict
    query_xml:
      description: The same for C(nvidia-smi -q -x), when C(xml) is in I(query_formats).
      type: dict
    query_text:
      description: The same for C(nvidia-smi -q), when C(text) is in I(query_formats).
      type: dict
    nvlink_status:
      description: The same for C(nvidia-smi nvlink -s), when I(nvlink) is true.
      type: dict
    nvlink_errors:
      description: The same for C(nvidia-smi nvlink -e), when I(nvlink) is true.
      type: dict
"""

from ansible_collections.gpufleet.acceptance.plugins.module_utils.fact_module import run_fact_module

# The node-side code lives in module_utils/gpu_collect.py, shared with node_facts (all groups in one run);
# its names stay importable from here.
from ansible_collections.gpufleet.acceptance.plugins.module_utils.gpu_collect import (  # noqa: F401 pylint: disable=unused-import
    ARGUMENT_SPEC,
    FORMAT_KEYS,
    NVIDIA_SMI_QUERIES,
    collect,
    run,
)


def main():
    run_fact_module(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()

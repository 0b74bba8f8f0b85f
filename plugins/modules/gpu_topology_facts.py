#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_topology_facts
short_description: Collect the GPU/NIC topology matrix of a node and classify every link
description:
  - Runs C(nvidia-smi topo -m) on the node (as an argv list, with C(LC_ALL=C) and a timeout) and returns
    its raw output; the action plugin of the same name parses it on the controller.
  - The returned facts give, per GPU pair, the link class (NVLink with its link count, same PCIe
    switch, PCIe host bridge, same NUMA node, across NUMA nodes), each GPU's nearest NIC and
    the path to it, CPU and NUMA affinity, and a summary (all pairs NVLink? minimum NV count?).
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
  timeout:
    description:
      - Seconds C(nvidia-smi topo -m) may run before it is stopped.
    type: int
    default: 60
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
  - gpufleet.acceptance.fact_phase
attributes:
  facts:
    support: full
    description: Sets C(gpufleet_topology).
notes:
  - Needs the NVIDIA driver on the node. Parsing happens on the controller, so the node needs
    only its OS Python (3.8 or later).
seealso:
  - module: gpufleet.acceptance.gpu_facts
  - module: gpufleet.acceptance.nic_facts
"""

EXAMPLES = r"""
- name: Read the GPU topology of every rented node
  gpufleet.acceptance.gpu_topology_facts:

- name: Use the driver container's nvidia-smi
  gpufleet.acceptance.gpu_topology_facts:
    nvidia_smi_path: /run/nvidia/driver/usr/bin/nvidia-smi
    timeout: 30

- name: Show which GPU pairs are not NVLink
  ansible.builtin.debug:
    msg: "{{ gpufleet_topology.summary.non_nvlink_pairs }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the action plugin.
  returned: success
  type: complex
  contains:
    gpufleet_topology:
      description: The parsed matrix and what follows from it.
      returned: success
      type: complex
      contains:
        gpus:
          description: GPUs in matrix order with their affinity as printed (null when blank).
          type: list
          elements: dict
          sample: [{"name": "GPU0", "cpu_affinity": "48-63,176-191", "numa_affinity": "3"}]
        nics:
          description: NICs with their RDMA device name from the NIC legend or the header.
          type: list
          elements: dict
          sample: [{"name": "NIC0", "device": "mlx5_0"}]
        links:
          description: "The matrix as printed: row name, then column name, then the code."
          type: dict
          sample: {"GPU0": {"GPU0": "X", "GPU1": "NV12"}}
        gpu_pairs:
          description: One entry per unordered GPU pair with its link class.
          type: list
          elements: dict
          sample: [{"a": "GPU0", "b": "GPU1", "code": "NV12", "link_class": "nvlink", "nvlinks": 12}]
        nearest_nic:
          description: Per GPU, the NICs at the shortest PCIe path and that path's code.
          type: dict
          sample: {"GPU0": {"nics": ["NIC0", "NIC1"], "devices": ["mlx5_0", "mlx5_1"], "code": "PXB"}}
        summary:
          description: Counts and the judgement-ready booleans.
          type: dict
          sample:
            gpu_count: 8
            nic_count: 12
            all_pairs_nvlink: true
            min_nvlinks: 12
            max_nvlinks: 12
            non_nvlink_pairs: []
            link_classes: {"nvlink": 28}
raw:
  description: What the node printed, for the results directory and dispute bundles.
  returned: always
  type: dict
  contains:
    topo_m:
      description: C(cmd), C(rc), C(stdout), C(stderr), C(duration_s), C(error) of C(nvidia-smi topo -m).
      type: dict
"""

from ansible_collections.gpufleet.acceptance.plugins.module_utils.fact_module import run_fact_module

# The node-side code lives in module_utils/topology_collect.py, shared with node_facts (all groups in one run);
# its names stay importable from here.
from ansible_collections.gpufleet.acceptance.plugins.module_utils.topology_collect import (  # noqa: F401 pylint: disable=unused-import
    ARGUMENT_SPEC,
    collect,
    run,
)


def main():
    run_fact_module(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()

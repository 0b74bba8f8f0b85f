#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_facts
short_description: Collect every gpufleet fact group of a node in one module run
description:
  - One module run on the node does what M(gpufleet.acceptance.gpu_topology_facts),
    M(gpufleet.acceptance.gpu_facts), M(gpufleet.acceptance.nic_facts) and M(gpufleet.acceptance.host_facts)
    do in four - the same commands (argv lists, C(LC_ALL=C), a timeout each), the same files, the same
    raw output - so a fleet pays one round trip per node instead of four.
  - The action plugin of the same name parses each group's raw output on the controller with the
    same code as those four modules' action plugins, so each group's facts are the ones that module
    would have set.
  - A group that fails (its tool missing, a failed command, output that cannot be read) fails only
    itself; the other groups are still gathered and set. The task fails only when every group it
    gathered failed.
  - The role M(gpufleet.acceptance.facts) uses this module; the four modules stay for playbooks that call
    them one by one.
  - With O(record), the host's record and raw outputs are written into a results directory on the controller
    by this task, and the raw outputs are left out of its result.
  - Nothing is changed on the node.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  groups:
    description:
      - The fact groups to gather.
    type: list
    elements: str
    choices: [topology, gpu, nic, host]
    default: [topology, gpu, nic, host]
  timeout:
    description:
      - Seconds each tool may run before it is stopped. When not given, each group uses its own
        module's default (60 for C(topology), C(gpu) and C(host), 30 for C(nic)).
    type: int
  phase_timeout:
    description:
      - Seconds the whole run's tools may take all together, every group's (the fact phase's budget). Each tool
        gets the smaller of its O(timeout) and what is left of it; once it is spent the tools left are not run
        (their raw entry says C(skipped) with the reason, naming the tool that took the budget) and the module
        answers with what it gathered, so a node whose tools answer just under their timeout, many times, costs
        no more than this. The facts that output allows are built (a group lists the tools that overran in its
        C(overran) fact), and the verdict says INCOMPLETE naming them, never REJECT for it.
      - When not given, twice the longest tool timeout of the groups asked for plus 30 seconds (150 with the
        default timeouts). With O(collector=separate) the four module runs share this one budget.
      - The role M(gpufleet.acceptance.facts) sets it from C(gpufleet_fact_phase_timeout) and gives its task this
        budget plus 60 seconds, so the module always answers first.
    type: int
  phase_output_budget:
    description:
      - Bytes of output the whole run may keep all together, every group's (the fact phase's output budget) - every
        tool's stdout and stderr and every file read; each tool stream is also capped at 8 MiB on its own, which
        alone does not bound a tool run once per interface. Once it is spent each later tool still runs, but its
        output is read and dropped, and its raw entry says C(truncated) with C(truncated_reason) (C(the fact phase's
        output budget of 64 MiB was spent)); a file read then keeps nothing. The facts the rest allows are built (a
        cut output is read as a skipped tool's, never parsed), a group lists the cut tools in its C(overran) fact,
        and the verdict says INCOMPLETE naming them, never REJECT for it.
      - A size such as C(64M) or C(1G) (units of 1024) or a number of bytes. When not given, 64 MiB. With
        O(collector=separate) each of the four module runs gets this budget.
      - The role M(gpufleet.acceptance.facts) sets it from C(gpufleet_fact_phase_output_budget).
    type: bytes
  nvidia_smi_path:
    description:
      - Name or path of C(nvidia-smi) on the node (groups C(topology) and C(gpu)).
    type: str
    default: nvidia-smi
  lspci_path:
    description:
      - Name or path of C(lspci) on the node (groups C(gpu) and C(host)).
    type: str
    default: lspci
  query_formats:
    description:
      - Renderings of C(nvidia-smi -q) to collect (group C(gpu)); see M(gpufleet.acceptance.gpu_facts).
    type: list
    elements: str
    choices: [xml, text]
    default: [xml, text]
  nvlink:
    description:
      - Also run C(nvidia-smi nvlink -s) and C(nvidia-smi nvlink -e) (group C(gpu)).
    type: bool
    default: true
  sysfs_root:
    description:
      - Where sysfs is mounted on the node (groups C(nic) and C(host)).
    type: path
    default: /sys
  ethtool_path:
    description:
      - Name or path of C(ethtool) on the node (group C(nic)).
    type: str
    default: ethtool
  ibstat_path:
    description:
      - Name or path of C(ibstat) on the node (group C(nic)).
    type: str
    default: ibstat
  ibv_devinfo_path:
    description:
      - Name or path of C(ibv_devinfo) on the node (group C(nic)).
    type: str
    default: ibv_devinfo
  ip_path:
    description:
      - Name or path of C(ip) on the node (group C(nic)).
    type: str
    default: ip
  procfs_root:
    description:
      - Where procfs is mounted on the node (groups C(host), and C(nic) for C(net/bonding/*)).
    type: path
    default: /proc
  journalctl_path:
    description:
      - Name or path of C(journalctl) on the node (group C(host)).
    type: str
    default: journalctl
  dmesg_path:
    description:
      - Name or path of C(dmesg) on the node; used when C(journalctl) gives no kernel line (group C(host)).
    type: str
    default: dmesg
  ofed_info_path:
    description:
      - Name or path of C(ofed_info) (group C(host)); optional on the node.
    type: str
    default: ofed_info
  mpirun_path:
    description:
      - Name or path of C(mpirun) (group C(host)); optional on the node.
    type: str
    default: mpirun
  ldconfig_path:
    description:
      - Name or path of C(ldconfig) (group C(host)); optional on the node.
    type: str
    default: ldconfig
  nccl_include_dirs:
    description:
      - Directories searched for C(nccl.h) when C(ldconfig) names no versioned C(libnccl.so) (group C(host)).
    type: list
    elements: path
    default: [/usr/include, /usr/local/include, /usr/local/cuda/include, /opt/nvidia/nccl/include]
  kernel_log_lines:
    description:
      - Only the last this many lines of the kernel log are returned and parsed (group C(host)).
    type: int
    default: 20000
  collector:
    description:
      - V(combined) gathers the groups in one module run on the node. V(separate) runs
        M(gpufleet.acceptance.gpu_topology_facts), M(gpufleet.acceptance.gpu_facts), M(gpufleet.acceptance.nic_facts)
        and M(gpufleet.acceptance.host_facts) one by one instead (four round trips; each gets only its own
        options); the result is the same. Read by the action plugin; not sent to the node.
    type: str
    choices: [combined, separate]
    default: combined
  record:
    description:
      - Write the host's record (facts, fact errors, raw outputs) into a results directory on the controller as
        soon as they are parsed, as M(gpufleet.acceptance.results_record) does, and leave the raw outputs out of
        this task's result (RV(groups) then carries no C(raw); the files are in the results directory).
      - A node that cannot be reached is recorded unreachable, then reported unreachable as usual.
      - Read by the action plugin; not sent to the node.
    type: dict
    suboptions:
      run_dir:
        description:
          - The results directory, created by M(gpufleet.acceptance.results_record) with O(gpufleet.acceptance.results_record#module:phase=start).
        type: path
        required: true
      claim:
        description:
          - The seller's claim for the host (C(gpufleet_claim)), recorded with its facts.
        type: dict
      profile:
        description:
          - The profile the host asked for (C(gpufleet_profile)), recorded as asked.
        type: str
      profile_overrides:
        description:
          - The host's C(gpufleet_profile_overrides), recorded as asked.
        type: dict
      settings:
        description:
          - Other inventory settings the checks read (for example C(gpufleet_nccl_env)).
        type: dict
      after:
        description:
          - The health re-read after a stress phase (V(benchmarks) or V(burn_in)) instead of the host's first
            reading - O(groups) C(gpu), C(nic), C(host). It is recorded beside the first reading, under
            C(health_after.<phase>) of the host record with its raw outputs under C(raw/<host>/after_<phase>/), and
            the first reading is kept; the check family C(after_stress) compares the two.
        type: str
        choices: [benchmarks, burn_in]
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
attributes:
  facts:
    support: full
    description: Sets C(gpufleet_topology), C(gpufleet_gpu), C(gpufleet_nic) and C(gpufleet_host), each for a group that succeeded.
notes:
  - Become applies to the whole run. The C(host) group wants root (C(lspci) ACS capabilities, the
    kernel log) and C(ethtool) prints more as root; the other tools read the same either way.
  - Parsing happens on the controller, so the node needs only its OS Python (3.8 or later).
seealso:
  - module: gpufleet.acceptance.gpu_topology_facts
  - module: gpufleet.acceptance.gpu_facts
  - module: gpufleet.acceptance.nic_facts
  - module: gpufleet.acceptance.host_facts
"""

EXAMPLES = r"""
- name: Every fact group of every rented node, one module run each
  gpufleet.acceptance.node_facts:
  become: true
  register: gathered

- name: Topology and GPUs only, on a PCIe-only fleet
  gpufleet.acceptance.node_facts:
    groups: [topology, gpu]
    nvlink: false

- name: Every fact group, recorded into this run's results directory as it arrives
  gpufleet.acceptance.node_facts:
    record:
      run_dir: results/acceptance-1
      claim: "{{ gpufleet_claim | default(omit) }}"
  become: true

- name: Show the groups that failed on a node
  ansible.builtin.debug:
    msg: "{{ gathered.groups | dict2items | selectattr('value.failed', 'defined') | map(attribute='key') | list }}"
"""

RETURN = r"""
ansible_facts:
  description:
    - Set by the action plugin, one key per group that succeeded, each exactly what that group's own
      module sets.
  returned: when at least one group succeeded
  type: complex
  contains:
    gpufleet_topology:
      description: As set by M(gpufleet.acceptance.gpu_topology_facts).
      returned: when C(topology) succeeded
      type: dict
    gpufleet_gpu:
      description: As set by M(gpufleet.acceptance.gpu_facts).
      returned: when C(gpu) succeeded
      type: dict
    gpufleet_nic:
      description: As set by M(gpufleet.acceptance.nic_facts).
      returned: when C(nic) succeeded
      type: dict
    gpufleet_host:
      description: As set by M(gpufleet.acceptance.host_facts).
      returned: when C(host) succeeded
      type: dict
groups:
  description:
    - Per group (C(topology), C(gpu), C(nic), C(host)) the result that group's own module task would
      have registered - C(changed), C(raw), and C(ansible_facts) when it succeeded or C(failed) and
      C(msg) when it did not; a group not asked for is C(skipped).
    - The node side returns only C(raw), C(failed) and C(msg) per group; the action plugin adds the facts.
    - With O(record), once the record is written, a group keeps neither its C(raw) nor its C(ansible_facts) (both are
      in the record, and the facts in this result's own C(ansible_facts) too). A group's C(failed) and C(msg) stay.
  returned: always
  type: dict
  sample:
    topology: {"changed": false, "raw": {"topo_m": {"cmd": ["nvidia-smi", "topo", "-m"], "rc": 0}}, "ansible_facts": {"gpufleet_topology": {}}}
    gpu: {"changed": false, "failed": true, "msg": "nvidia-smi not found: is the NVIDIA driver installed?", "raw": {}}
    nic: {"changed": false, "skipped": true, "skip_reason": "nic is not in groups"}
record:
  description: The host's record in the results directory (C(hosts/<host>.json)).
  returned: when O(record) was given and the record was written
  type: str
  sample: results/acceptance-1/hosts/node-01.json
raw_files:
  description: How many raw output files were written for the host under C(raw/<host>/).
  returned: when O(record) was given and the record was written
  type: int
  sample: 14
"""

from ansible.module_utils.basic import AnsibleModule

# The module's work lives in module_utils/node_run.py (stdlib only): the action plugin also runs it without this
# wrapper (plugins/action/node_facts.py), and the names below are this module's interface as they were.
from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_run import (  # noqa: F401 pylint: disable=unused-import
    COLLECTORS,
    GROUPS,
    argument_spec,
    collect,
    group_params,
    phase_budget_of,
)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.exit_json(changed=False, groups=collect(module.params))


if __name__ == "__main__":
    main()

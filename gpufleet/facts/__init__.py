# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts: one node's raw collector results (what the node-side modules return) -> typed facts per group."""

# The fact groups and the Ansible fact each sets: the checks read them, the results store records them.
FACT_GROUPS = {
    "topology": "gpufleet_topology",
    "gpu": "gpufleet_gpu",
    "nic": "gpufleet_nic",
    "host": "gpufleet_host",
}

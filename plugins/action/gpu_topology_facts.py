# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.gpu_topology_facts: parse the matrix, classify links."""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.fact_action import FactAction
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.topology import analyse_topology


class ActionModule(FactAction):
    """Set ``gpufleet_topology`` from ``nvidia-smi topo -m``."""

    MODULE = "gpufleet.acceptance.gpu_topology_facts"

    def build_facts(self, reader):
        parsed = reader.parsed("topo_m", "topo")
        topology = dict(parsed)
        topology.update(analyse_topology(parsed))
        return {"gpufleet_topology": topology}

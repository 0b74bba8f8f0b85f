# -*- coding: utf-8 -*-
# Copyright: gpufleet engineers
# Apache License 2.0 (see galaxy.yml)
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

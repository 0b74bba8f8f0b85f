# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.gpu_topology_facts: a thin adapter over ``gpufleet.facts.topology.build_facts``."""

from __future__ import annotations

from gpufleet.facts import topology
from gpufleet.adapter.action import FactAction


class ActionModule(FactAction):
    """Set ``gpufleet_topology`` from ``nvidia-smi topo -m``."""

    MODULE = "gpufleet.acceptance.gpu_topology_facts"
    build_facts = staticmethod(topology.build_facts)

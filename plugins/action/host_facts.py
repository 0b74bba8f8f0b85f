# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.host_facts: a thin adapter over ``gpufleet.facts.host.build_facts``."""

from __future__ import annotations

from gpufleet.facts import host
from gpufleet.adapter.action import FactAction


class ActionModule(FactAction):
    """Set ``gpufleet_host`` from the host preconditions the node returned."""

    MODULE = "gpufleet.acceptance.host_facts"
    build_facts = staticmethod(host.build_facts)

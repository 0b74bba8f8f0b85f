# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.nic_facts: a thin adapter over ``gpufleet.facts.nic.build_facts``."""

from __future__ import annotations

from gpufleet.facts import nic
from gpufleet.adapter.action import FactAction


class ActionModule(FactAction):
    """Set ``gpufleet_nic`` from sysfs, ethtool, ibstat, ibv_devinfo and ip -j addr."""

    MODULE = "gpufleet.acceptance.nic_facts"
    build_facts = staticmethod(nic.build_facts)

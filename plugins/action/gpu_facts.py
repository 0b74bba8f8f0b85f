# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.gpu_facts: a thin adapter over ``gpufleet.facts.gpu.build_facts``."""

from __future__ import annotations

from gpufleet.facts import gpu
from gpufleet.adapter.action import FactAction


class ActionModule(FactAction):
    """Set ``gpufleet_gpu`` from nvidia-smi -q -x / -q, nvlink -s / -e and lspci -nn."""

    MODULE = "gpufleet.acceptance.gpu_facts"
    build_facts = staticmethod(gpu.build_facts)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection of gpufleet.acceptance.gpu_topology_facts (also run by gpufleet.acceptance.node_facts).

Standard library only, Python 3.8+. Runs the tool; parses nothing (the controller does).
"""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import (
    module_phase,
    overran,
    phase_problem,
    run_tool,
)

ARGUMENT_SPEC = {
    "nvidia_smi_path": {"type": "str", "default": "nvidia-smi"},
    "timeout": {"type": "int", "default": 60},
    "phase_timeout": {"type": "int"},
    "phase_output_budget": {"type": "bytes"},
}


def collect(nvidia_smi_path, timeout):
    """Everything this phase needs from the node, in one call."""
    return {"topo_m": run_tool([nvidia_smi_path, "topo", "-m"], timeout)}


def run(params):
    """``(raw, failure message or None)`` for the module's parameters (ARGUMENT_SPEC's keys, defaults applied).

    A ``topo -m`` that timed out or was skipped fails nothing here: the controller names it.
    """
    problem = phase_problem(params)
    if problem:
        return {}, problem
    with module_phase(params):
        raw = collect(params["nvidia_smi_path"], params["timeout"])
    topo = raw["topo_m"]
    if topo["error"] == "not_found":
        return raw, "%s not found: is the NVIDIA driver installed?" % params["nvidia_smi_path"]
    if topo["error"] and not overran(topo):
        return raw, "nvidia-smi topo -m failed: %s" % topo["error"]
    return raw, None

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection of gpufleet.acceptance.gpu_facts (also run by gpufleet.acceptance.node_facts).

Standard library only, Python 3.8+. Runs the tools; parses nothing (the controller does).
"""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import (
    module_phase,
    overran,
    phase_problem,
    run_tool,
)

# raw key -> nvidia-smi arguments, in the order they run.
NVIDIA_SMI_QUERIES = (
    ("query_xml", ("-q", "-x")),
    ("query_text", ("-q",)),
    ("nvlink_status", ("nvlink", "-s")),
    ("nvlink_errors", ("nvlink", "-e")),
)
FORMAT_KEYS = {"xml": "query_xml", "text": "query_text"}


def collect(nvidia_smi_path, lspci_path, timeout, query_formats=("xml", "text"), nvlink=True):
    """Everything this phase needs from the node, in one call.

    lspci runs first so that its output is there even when nvidia-smi is missing. nvidia-smi
    not being found stops the collection (every later query would say the same); once it timed out,
    run_tool skips its later queries with the reason (one timeout per node, not four), as it skips every
    run once the fact phase's budget is spent.
    """
    raw = {"lspci": run_tool([lspci_path, "-nn"], timeout)}
    wanted = {FORMAT_KEYS[name] for name in query_formats}
    if nvlink:
        wanted.update(("nvlink_status", "nvlink_errors"))
    for key, args in NVIDIA_SMI_QUERIES:
        if key not in wanted:
            continue
        raw[key] = run_tool([nvidia_smi_path] + list(args), timeout)
        if raw[key]["error"] == "not_found":
            break
    return raw


ARGUMENT_SPEC = {
    "nvidia_smi_path": {"type": "str", "default": "nvidia-smi"},
    "lspci_path": {"type": "str", "default": "lspci"},
    "timeout": {"type": "int", "default": 60},
    "query_formats": {"type": "list", "elements": "str", "choices": ["xml", "text"], "default": ["xml", "text"]},
    "nvlink": {"type": "bool", "default": True},
    "phase_timeout": {"type": "int"},
    "phase_output_budget": {"type": "bytes"},
}


def run(params):
    """``(raw, failure message or None)`` for the module's parameters (ARGUMENT_SPEC's keys, defaults applied).

    A query that timed out or was skipped fails nothing here: the controller builds what the other outputs hold
    and names what is missing.
    """
    if not params["query_formats"]:
        return {}, "query_formats needs xml, text or both"
    problem = phase_problem(params)
    if problem:
        return {}, problem
    with module_phase(params):
        raw = collect(params["nvidia_smi_path"], params["lspci_path"], params["timeout"], params["query_formats"],
                      params["nvlink"])
    for key, args in NVIDIA_SMI_QUERIES:
        entry = raw.get(key)
        if entry is None:
            continue
        if entry["error"] == "not_found":
            return raw, "%s not found: is the NVIDIA driver installed?" % params["nvidia_smi_path"]
        if entry["error"] and key in ("query_xml", "query_text") and not overran(entry):
            return raw, "nvidia-smi %s failed: %s" % (" ".join(args), entry["error"])
    return raw, None

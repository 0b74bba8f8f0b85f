# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.gpu_facts: parse, cross-check, merge, summarise."""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.fact_action import FactAction, FactError
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.gpu_inventory import InventoryMismatch, build_inventory


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _soft(reader, key, kind):
    """Parse ``key`` when it exited 0; a non-zero exit is not fatal for nvlink queries.

    nvidia-smi prints "not supported in MIG mode" / "all links are inActive" in place of links
    (exit 0 on the drivers recorded); some drivers exit non-zero instead. Then the output is
    parsed when it can be, else the tool's first line is kept as the GPU's NVLink message.
    Returns ``(parsed or None, failure message or None)``. A timeout, or damaged output with
    exit 0, fails as any other output does.
    """
    entry = reader.raw.get(key)
    if entry is None:
        return None, None
    if entry.get("error") or entry.get("rc") == 0:
        return reader.parsed(key, kind), None
    said = _first_line(entry.get("stderr")) or _first_line(entry.get("stdout")) or "no output"
    failure = "`%s` exited %s: %s" % (reader.command_label(key), entry.get("rc"), said)
    try:
        return reader.parsed(key, kind, allow_rc=(entry.get("rc"),)), None
    except FactError:
        return None, failure


def _lspci(reader):
    """Parsed lspci output, or ``(None, why)`` when lspci is absent or printed nothing."""
    entry = reader.raw.get("lspci")
    if entry is None:
        return None, None
    if entry.get("error") == "not_found":
        return None, "%s not found on the node: the lspci GPU count is unknown" % entry["cmd"][0]
    if not reader.output("lspci").strip():
        return None, "`%s` printed nothing (no PCI access?): the lspci GPU count is unknown" % reader.command_label("lspci")
    return reader.parsed("lspci", "lspci"), None


def gather(reader):
    """The ``gpufleet_gpu`` fact from one host's raw collector results."""
    xml = reader.parsed("query_xml", "nvidia-smi-xml") if "query_xml" in reader.raw else None
    text = reader.parsed("query_text", "nvidia-smi-q") if "query_text" in reader.raw else None
    if xml is None and text is None:
        raise FactError("%s: neither `nvidia-smi -q -x` nor `nvidia-smi -q` was collected" % reader.host)
    failures = {}
    status, failures["nvlink_status"] = _soft(reader, "nvlink_status", "nvlink-status")
    errors, failures["nvlink_errors"] = _soft(reader, "nvlink_errors", "nvlink-errors")
    lspci, failures["lspci"] = _lspci(reader)
    collected = "nvlink_status" in reader.raw or "nvlink_errors" in reader.raw
    try:
        return build_inventory(xml, text, status, errors, lspci, failures=failures, nvlink_collected=collected)
    except InventoryMismatch as exc:
        raise FactError("%s: %s" % (reader.host, exc)) from None


class ActionModule(FactAction):
    """Set ``gpufleet_gpu`` from nvidia-smi -q -x / -q, nvlink -s / -e and lspci -nn."""

    MODULE = "gpufleet.acceptance.gpu_facts"

    def build_facts(self, reader):
        return {"gpufleet_gpu": gather(reader)}

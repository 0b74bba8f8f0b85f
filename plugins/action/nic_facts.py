# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.nic_facts: parse the tools, merge with sysfs."""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.fact_action import FactAction, FactError, RawReader
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.nic_inventory import build_nic_facts
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.parsers.common import ParseError
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.parsers.registry import parse

# raw key -> (parser kind, tool name in summary.tools_missing)
RDMA_TOOLS = {"ibstat": ("ibstat", "ibstat"), "ibv_devinfo": ("ibv-devinfo", "ibv_devinfo")}


def _without_host(host, message):
    prefix = "%s: " % host
    return message[len(prefix):] if message.startswith(prefix) else message


def read_ethtool(host, runs, kind):
    """Per interface: parsed output, or the reason there is none; and whether ethtool is missing.

    A run that exits non-zero marks only its interface (what it printed before, e.g. before a
    crash, is still parsed when it can be); output of a clean run that cannot be read fails.
    """
    parsed, errors, missing = {}, {}, False
    reader = RawReader(host, runs or {})
    for name, entry in sorted((runs or {}).items()):
        if entry.get("error") == "not_found":
            missing = True
            continue
        try:
            parsed[name] = reader.parsed(name, kind)
        except FactError as exc:
            if entry.get("rc") == 0:
                raise
            errors[name] = _without_host(host, str(exc))
            try:
                parsed[name] = parse(kind, entry.get("stdout") or "")
            except ParseError:
                parsed[name] = None
    return parsed, errors, missing


def read_rdma_tool(reader, key, kind):
    """Parsed ``ibstat``/``ibv_devinfo``; a non-zero exit fails naming the error the tool printed.

    A capture may hold stdout and stderr together (``ibstat`` prints its devices, then
    ``ibpanic: ...`` and exits 255): the parser's ``errors`` then say what went wrong.
    """
    try:
        return reader.parsed(key, kind)
    except FactError:
        entry = reader.raw.get(key) or {}
        if entry.get("rc") in (0, None):
            raise
        said = None
        try:
            errors = parse(kind, "\n".join([entry.get("stdout") or "", entry.get("stderr") or ""])).get("errors") or []
            said = errors[-1]["text"] if errors else None
        except ParseError:
            pass
        if said is None:
            raise
        raise FactError("%s: `%s` exited %s: %s" % (reader.host, reader.command_label(key), entry["rc"], said)) from None


class ActionModule(FactAction):
    """Set ``gpufleet_nic`` from sysfs, ethtool, ibstat, ibv_devinfo and ip -j addr."""

    MODULE = "gpufleet.acceptance.nic_facts"

    def build_facts(self, reader):
        raw = reader.raw
        sysfs = raw.get("sysfs") or {}
        missing = []
        ethtool, ethtool_errors, ethtool_missing = read_ethtool(reader.host, raw.get("ethtool"), "ethtool")
        driver_info, driver_errors, _driver_missing = read_ethtool(reader.host, raw.get("ethtool_driver"), "ethtool-driver")
        if ethtool_missing:
            missing.append("ethtool")
        for name in raw.get("skipped_names") or []:
            ethtool_errors[name] = "name not passed to ethtool: not an interface name"
        has_rdma = bool(sysfs.get("infiniband"))
        tools = {}
        for key, (kind, tool) in RDMA_TOOLS.items():
            entry = raw.get(key) or {}
            if entry.get("error") == "not_found":
                missing.append(tool)
                tools[key] = None
            elif has_rdma:
                tools[key] = read_rdma_tool(reader, key, kind)
            else:
                # No RDMA device in sysfs: "No IB devices found" and its exit code say nothing new.
                tools[key] = None
        ip_addr = reader.optional("ip_addr", "ip-addr")
        if ip_addr is None:
            missing.append("ip")
        facts = build_nic_facts(sysfs, ethtool=ethtool, ethtool_driver=driver_info, ethtool_errors=ethtool_errors, ibstat=tools["ibstat"],
                                ibv_devinfo=tools["ibv_devinfo"], ip_addr=ip_addr, tools_missing=missing, ethtool_driver_errors=driver_errors)
        return {"gpufleet_nic": facts}

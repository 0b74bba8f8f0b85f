# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node's sysfs and NIC tools say about its network interfaces (pure, controller side).

Input is the raw ``sysfs`` snapshot the ``nic_facts`` collector returns (strings as read, None
where a file could not be read) plus the parsed outputs of ``ethtool``, ``ethtool -i``,
``ibstat``, ``ibv_devinfo`` and ``ip -j addr`` (None when the tool is not installed). Output
is ``gpufleet_nic``: ``interfaces``, ``rdma`` and ``summary``. Nothing here does I/O.

sysfs value formats read here (see :func:`parse_port_state`, :func:`parse_rate`,
:func:`pcie_generation`): port ``state`` ``4: ACTIVE``, ``phys_state`` ``5: LinkUp``,
``rate`` ``400 Gb/sec (4X NDR)``, PCIe ``current_link_speed`` ``16.0 GT/s PCIe`` / ``8 GT/s``,
``lid`` ``0x80``, net ``speed`` ``-1`` when unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from gpufleet.facts.raw import FactError, RawReader
from gpufleet.facts.shapes import (Bond, BondMember, Gid, HcaPart, Interface, InterfacePcie, InterfaceSummary,
                                   IpAddress, NicFactGroup, NicFacts, NicSummary, RdmaDevice, RdmaPort, RdmaSummary)
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import parse

# PCIe transfer rate per lane (GT/s) -> generation.
PCIE_GT_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

# sysfs port states (include/rdma/ib_verbs.h enum ib_port_state) in ibstat's spelling, so
# judges compare one vocabulary whichever source a value came from.
PORT_STATE_WORDS = {"NOP": "Nop", "DOWN": "Down", "INIT": "Initializing", "ARMED": "Armed", "ACTIVE": "Active",
                    "ACTIVE_DEFER": "ActiveDefer"}
IBV_STATE_WORDS = {"PORT_NOP": "Nop", "PORT_DOWN": "Down", "PORT_INIT": "Initializing", "PORT_ARMED": "Armed",
                   "PORT_ACTIVE": "Active", "PORT_ACTIVE_DEFER": "ActiveDefer"}

# IB port error counters (ports/N/counters/*): a non-zero value is worth a judge's look.
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
)

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
ARPHRD_LOOPBACK = 772

_STATE_RE = re.compile(r"^\s*(\d+)\s*:\s*(\S.*?)\s*$")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec\s*(?:\((.*)\))?\s*$")
_GTS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s\b")
_INT_RE = re.compile(r"^\s*-?\d+\s*$")
_HEX_RE = re.compile(r"^\s*0x[0-9a-fA-F]+\s*$")


class Rate(TypedDict):
    """An IB port's rate as sysfs prints it (:func:`parse_rate`)."""

    gbps: float
    text: str | None
    width: str | None
    speed: str | None


# --- sysfs value formats -------------------------------------------------------------------


def parse_int(value: str | None) -> int | None:
    """A sysfs number (decimal or ``0x`` hex) as int; None for unreadable/``N/A``/other text."""
    if value is None:
        return None
    if _INT_RE.match(value):
        return int(value)
    if _HEX_RE.match(value):
        return int(value, 16)
    return None


def parse_port_state(value: str | None) -> tuple[int | None, str | None]:
    """``"4: ACTIVE"`` -> ``(4, "ACTIVE")``; ``(None, None)`` when unreadable or not that form."""
    if value is None:
        return None, None
    match = _STATE_RE.match(value)
    if not match:
        return None, None
    return int(match.group(1)), match.group(2)


def port_state_word(word: str | None) -> str | None:
    """sysfs/ibv_devinfo state word in ibstat's spelling (``ACTIVE``/``PORT_ACTIVE`` -> ``Active``)."""
    if word is None:
        return None
    if word in PORT_STATE_WORDS:
        return PORT_STATE_WORDS[word]
    if word in IBV_STATE_WORDS:
        return IBV_STATE_WORDS[word]
    return word


def parse_rate(value: str | None) -> Rate | None:
    """``"400 Gb/sec (4X NDR)"`` -> ``{"gbps": 400, "text": "4X NDR", "width": "4X", "speed": "NDR"}``.

    ``"10 Gb/sec (4X)"`` has no speed word (None); unreadable or another form -> None.
    """
    if value is None:
        return None
    match = _RATE_RE.match(value)
    if not match:
        return None
    number = float(match.group(1))
    gbps = int(number) if number.is_integer() else number
    text = (match.group(2) or "").strip() or None
    width: str | None = None
    speed: str | None = None
    if text:
        words = text.split()
        if re.match(r"^\d+X$", words[0]):
            width = words[0]
            speed = " ".join(words[1:]) or None
        else:
            speed = text
    return {"gbps": gbps, "text": text, "width": width, "speed": speed}


def pcie_generation(value: str | None) -> int | None:
    """PCIe link speed as sysfs prints it (``"16.0 GT/s PCIe"``, ``"8 GT/s"``) -> generation 1..6.

    None when unreadable, ``Unknown``, or a rate that is no PCIe generation.
    """
    if value is None:
        return None
    match = _GTS_RE.match(value)
    if not match:
        return None
    return PCIE_GT_TO_GEN.get(float(match.group(1)))


def normalise_guid(value: str | None) -> str | None:
    """A GUID in sysfs/ibv_devinfo form ``xxxx:xxxx:xxxx:xxxx`` (ibstat prints ``0x...``)."""
    if value is None:
        return None
    text = value.strip().lower()
    if text.startswith("0x"):
        digits = text[2:].rjust(16, "0")
        if len(digits) == 16 and all(c in "0123456789abcdef" for c in digits):
            return ":".join(digits[i:i + 4] for i in range(0, 16, 4))
    return text


def text_value(value: str | None) -> str | None:
    """A sysfs string without surrounding whitespace/blank lines; None when unreadable or empty."""
    if value is None:
        return None
    value = value.strip()
    return value or None


def parse_counters(values: Mapping[str, str | None] | None) -> dict[str, int | None]:
    """``{name: "123"}`` -> ``{name: 123}``; a counter that reads ``N/A (no PMA)`` is None."""
    return {name: parse_int(text) for name, text in sorted((values or {}).items())}


# --- interfaces ----------------------------------------------------------------------------


def classify_interface(entry: Mapping[str, Any]) -> tuple[bool, str | None, str | None]:
    """``(virtual, virtual_kind, reason)`` of one sysfs ``class/net`` entry.

    Kinds: ``loopback``, ``docker``, ``veth``, ``bridge``, ``bond``, ``virtual`` (anything
    else without a ``device`` link: tun/tap, VLAN, macvlan, ...). An interface with a
    ``device`` link and none of these marks is physical: ``(False, None, None)``.
    """
    name = entry.get("name") or ""
    attrs = entry.get("attrs") or {}
    if name == "lo" or parse_int(attrs.get("type")) == ARPHRD_LOOPBACK:
        return True, "loopback", "loopback device"
    if name.startswith("docker"):
        return True, "docker", "name docker*"
    if name.startswith("veth"):
        return True, "veth", "name veth*"
    if entry.get("bridge"):
        return True, "bridge", "has a bridge/ directory"
    if name.startswith("virbr") or name.startswith("br-"):
        return True, "bridge", "name %s*" % ("virbr" if name.startswith("virbr") else "br-")
    if entry.get("bonding"):
        return True, "bond", "has a bonding/ directory"
    if entry.get("tun"):
        return True, "virtual", "tun/tap device"
    if not entry.get("device"):
        return True, "virtual", "no device link"
    return False, None, None


def _pcie(entry: Mapping[str, Any]) -> InterfacePcie | None:
    pci = entry.get("pci")
    if not entry.get("pci_address") or not pci:
        return None
    return {
        "gen_current": pcie_generation(pci.get("current_link_speed")),
        "width_current": parse_int(pci.get("current_link_width")),
        "gen_max": pcie_generation(pci.get("max_link_speed")),
        "width_max": parse_int(pci.get("max_link_width")),
        "speed_current": pci.get("current_link_speed"),
        "speed_max": pci.get("max_link_speed"),
    }


def _speed(value: str | None) -> int | None:
    speed = parse_int(value)
    # Unknown speed reads -1, or 4294967295 (SPEED_UNKNOWN as u32) on older kernels.
    if speed is None or speed < 0 or speed == 4294967295:
        return None
    return speed


def _carrier(value: str | None) -> bool | None:
    number = parse_int(value)
    if number is None:
        return None
    return number == 1


def _numa(value: str | None) -> int | None:
    number = parse_int(value)
    return None if number is None or number < 0 else number


def _addresses(ip_entry: Mapping[str, Any] | None, family: str) -> list[IpAddress] | None:
    if ip_entry is None:
        return None
    out: list[IpAddress] = []
    for addr in ip_entry.get("addresses") or []:
        if addr.get("family") == family:
            out.append({"address": addr.get("local"), "prefixlen": addr.get("prefixlen"), "scope": addr.get("scope"),
                        "dynamic": bool(addr.get("dynamic"))})
    return out


def build_interface(entry: Any, ethtool: dict[str, Any] | None = None, driver_info: dict[str, Any] | None = None,
                    ethtool_error: str | None = None, ip_entry: Mapping[str, Any] | None = None, ip_known: bool = True,
                    driver_error: str | None = None) -> Interface:
    """One ``interfaces[]`` fact from a sysfs ``class/net`` entry (as the node sent it) and what the tools said."""
    attrs = entry.get("attrs") or {}
    virtual, kind, reason = classify_interface(entry)
    iface: Interface = {
        "name": entry.get("name"),
        "virtual": virtual,
        "virtual_kind": kind,
        "virtual_reason": reason,
        "operstate": text_value(attrs.get("operstate")),
        "carrier": _carrier(attrs.get("carrier")),
        "speed_mbps": _speed(attrs.get("speed")),
        "duplex": text_value(attrs.get("duplex")),
        "mtu": parse_int(attrs.get("mtu")),
        "mac": text_value(attrs.get("address")),
        "arp_type": parse_int(attrs.get("type")),
        "numa_node": _numa((entry.get("pci") or {}).get("numa_node")),
        "pci_address": entry.get("pci_address"),
        "driver": entry.get("driver"),
        "pcie": _pcie(entry),
        "ethtool": ethtool,
        "ethtool_driver": driver_info,
        "ethtool_error": ethtool_error,
        "ethtool_driver_error": driver_error,
        "ipv4": _addresses(ip_entry, "inet") if ip_known else None,
        "ipv6": _addresses(ip_entry, "inet6") if ip_known else None,
        "rdma_device": None,
        "rdma_port": None,
        # /proc/net/bonding/<name> read by the collector (bonds only; None when not read).
        "bond": parse_bonding(entry.get("bonding_status")),
    }
    if ip_known and ip_entry is None:
        iface["ipv4"], iface["ipv6"] = [], []
    if iface["driver"] is None and driver_info:
        iface["driver"] = driver_info.get("driver")
    return iface


# --- bonds ---------------------------------------------------------------------------------

_BOND_KEY_RE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")
_MBPS_RE = re.compile(r"^(\d+)\s*Mbps$")
# /proc/net/bonding "Bonding Mode:" text of 802.3ad (drivers/net/bonding/bond_options.c names mode 4 so).
LACP_MODE_TEXT = "IEEE 802.3ad Dynamic link aggregation"


def parse_bonding(text: str | None) -> Bond | None:
    """The bonding driver's ``/proc/net/bonding/<bond>`` text -> mode, active aggregator and members.

    ``{"mode", "lacp", "mii_status", "active_aggregator", "members": [{"name", "mii_status",
    "speed_mbps", "duplex", "link_failure_count", "aggregator_id", "active"}]}``. A member is
    ``active`` when its MII status is up and, in 802.3ad, it sits in the active aggregator (a
    member LACP left in another aggregator carries no traffic). None for no text.
    """
    if not text or not text.strip():
        return None
    bond: Bond = {"mode": None, "lacp": False, "mii_status": None, "active_aggregator": None, "members": []}
    member: BondMember | None = None
    in_active_info = False
    for line in text.splitlines():
        match = _BOND_KEY_RE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if key == "Slave Interface":
            member = {"name": value, "mii_status": None, "speed_mbps": None, "duplex": None, "link_failure_count": None,
                      "aggregator_id": None, "active": False}
            bond["members"].append(member)
            in_active_info = False
        elif key == "Active Aggregator Info":
            in_active_info = True
        elif member is None:
            _read_bond_line(bond, key, value, in_active_info)
        else:
            _read_member_line(member, key, value)
    for item in bond["members"]:
        in_aggregator = (not bond["lacp"] or bond["active_aggregator"] is None
                         or item["aggregator_id"] == bond["active_aggregator"])
        item["active"] = item["mii_status"] == "up" and in_aggregator
    return bond


def _read_bond_line(bond: Bond, key: str, value: str, in_active_info: bool) -> None:
    """One ``key: value`` line of the bond's own part (before the first member)."""
    if key == "Bonding Mode":
        bond["mode"] = value
        bond["lacp"] = value == LACP_MODE_TEXT
    elif key == "MII Status":
        bond["mii_status"] = value
    elif key == "Aggregator ID" and in_active_info:
        bond["active_aggregator"] = parse_int(value)


def _read_member_line(member: BondMember, key: str, value: str) -> None:
    """One ``key: value`` line of a member's part (after its ``Slave Interface`` line)."""
    if key == "MII Status":
        member["mii_status"] = value
    elif key == "Speed":
        speed = _MBPS_RE.match(value)
        member["speed_mbps"] = int(speed.group(1)) if speed else None
    elif key == "Duplex":
        member["duplex"] = value
    elif key == "Link Failure Count":
        member["link_failure_count"] = parse_int(value)
    elif key == "Aggregator ID":
        member["aggregator_id"] = parse_int(value)


# --- RDMA ----------------------------------------------------------------------------------


def _port_netdev(port_entry: Mapping[str, Any], device_entry: Mapping[str, Any],
                 net_by_name: Mapping[str, Any]) -> str | None:
    """The netdev of one RDMA port: the GID table's ndevs first, then the PCI function's net/."""
    for gid in port_entry.get("gids") or []:
        if gid.get("ndev"):
            ndev: str = gid["ndev"]
            return ndev
    netdevs: list[str] = list(device_entry.get("netdevs") or [])
    if len(netdevs) == 1:
        return netdevs[0]
    number = parse_int(port_entry.get("port"))
    for name in netdevs:
        attrs = (net_by_name.get(name) or {}).get("attrs") or {}
        dev_port = parse_int(attrs.get("dev_port"))
        if dev_port is None:
            dev_port = parse_int(attrs.get("dev_id"))
        if dev_port is not None and number is not None and dev_port + 1 == number:
            return name
    return None


def build_rdma_port(port_entry: Mapping[str, Any], device_entry: Mapping[str, Any],
                    net_by_name: Mapping[str, Any]) -> RdmaPort:
    """One ``rdma[].ports[]`` fact from a sysfs port entry."""
    attrs = port_entry.get("attrs") or {}
    state_code, state_word = parse_port_state(attrs.get("state"))
    phys_code, phys_word = parse_port_state(attrs.get("phys_state"))
    rate = parse_rate(attrs.get("rate"))
    counters = parse_counters(port_entry.get("counters"))
    gids: list[Gid] = []
    for gid in port_entry.get("gids") or []:
        if gid.get("gid") and gid["gid"] != ZERO_GID:
            gids.append({"index": parse_int(gid.get("index")), "gid": gid["gid"], "type": gid.get("type"),
                         "netdev": gid.get("ndev")})
    return {
        "port": parse_int(port_entry.get("port")),
        "state": port_state_word(state_word),
        "state_code": state_code,
        "physical_state": phys_word,
        "physical_state_code": phys_code,
        "rate_gbps": rate["gbps"] if rate else None,
        "rate_text": rate["text"] if rate else None,
        "link_layer": text_value(attrs.get("link_layer")),
        "lid": parse_int(attrs.get("lid")),
        "sm_lid": parse_int(attrs.get("sm_lid")),
        "netdev": _port_netdev(port_entry, device_entry, net_by_name),
        "gids": gids,
        "counters": counters,
        "hw_counters": parse_counters(port_entry.get("hw_counters")),
        "errors": {name: counters[name] for name in ERROR_COUNTERS if counters.get(name)},
        "sources": ["sysfs"],
    }


def build_rdma_device(entry: Any, net_by_name: Mapping[str, Any]) -> RdmaDevice:
    """One ``rdma[]`` fact from a sysfs ``class/infiniband`` entry (as the node sent it)."""
    attrs = entry.get("attrs") or {}
    return {
        "device": entry.get("name"),
        "fw_ver": text_value(attrs.get("fw_ver")),
        "board_id": text_value(attrs.get("board_id")),
        "node_guid": normalise_guid(attrs.get("node_guid")),
        "sys_image_guid": normalise_guid(attrs.get("sys_image_guid")),
        "hca_type": text_value(attrs.get("hca_type")),
        "pci_address": entry.get("pci_address"),
        "netdevs": list(entry.get("netdevs") or []),
        "ports": [build_rdma_port(port, entry, net_by_name) for port in entry.get("ports") or []],
        "sources": ["sysfs"],
    }


def _empty_device(name: str) -> RdmaDevice:
    return {"device": name, "fw_ver": None, "board_id": None, "node_guid": None, "sys_image_guid": None,
            "hca_type": None, "pci_address": None, "netdevs": [], "ports": [], "sources": []}


def _empty_port(number: int | None) -> RdmaPort:
    return {"port": number, "state": None, "state_code": None, "physical_state": None, "physical_state_code": None,
            "rate_gbps": None, "rate_text": None, "link_layer": None, "lid": None, "sm_lid": None, "netdev": None,
            "gids": [], "counters": {}, "hw_counters": {}, "errors": {}, "sources": []}


def _known(current: Any, value: Any) -> Any:
    """``current``, or ``value`` where it is null: a tool fills only what sysfs (or the tool before) left null."""
    return value if current is None else current


def _device_for(by_name: dict[str, RdmaDevice], rdma: list[RdmaDevice], name: str) -> RdmaDevice:
    if name not in by_name:
        by_name[name] = _empty_device(name)
        rdma.append(by_name[name])
    return by_name[name]


def _port_for(device: RdmaDevice, number: int | None) -> RdmaPort:
    for port in device["ports"]:
        if port["port"] == number:
            return port
    port = _empty_port(number)
    device["ports"].append(port)
    return port


def merge_ibstat(rdma: list[RdmaDevice], ibstat: Mapping[str, Any] | None) -> list[RdmaDevice]:
    """Fill what sysfs did not give from ``ibstat``; add the devices only ibstat saw."""
    by_name = {dev["device"]: dev for dev in rdma}
    for dev in (ibstat or {}).get("devices") or []:
        if not dev.get("name"):
            continue
        target = _device_for(by_name, rdma, dev["name"])
        target["sources"].append("ibstat")
        target["fw_ver"] = _known(target["fw_ver"], dev.get("firmware_version"))
        target["hca_type"] = _known(target["hca_type"], dev.get("ca_type"))
        target["node_guid"] = _known(target["node_guid"], normalise_guid(dev.get("node_guid")))
        target["sys_image_guid"] = _known(target["sys_image_guid"], normalise_guid(dev.get("system_image_guid")))
        for port in dev.get("ports") or []:
            out = _port_for(target, port.get("port"))
            out["sources"].append("ibstat")
            out["state"] = _known(out["state"], port.get("state"))
            out["physical_state"] = _known(out["physical_state"], port.get("physical_state"))
            out["rate_gbps"] = _known(out["rate_gbps"], port.get("rate_gbps"))
            out["link_layer"] = _known(out["link_layer"], port.get("link_layer"))
            out["lid"] = _known(out["lid"], port.get("base_lid"))
            out["sm_lid"] = _known(out["sm_lid"], port.get("sm_lid"))
            out["port_guid"] = normalise_guid(port.get("port_guid"))
            out["capability_mask"] = port.get("capability_mask")
    return rdma


def merge_ibv_devinfo(rdma: list[RdmaDevice], devinfo: Mapping[str, Any] | None) -> list[RdmaDevice]:
    """Fill what sysfs/ibstat did not give from ``ibv_devinfo``; add MTUs and the part id."""
    by_name = {dev["device"]: dev for dev in rdma}
    for dev in (devinfo or {}).get("devices") or []:
        if not dev.get("name"):
            continue
        target = _device_for(by_name, rdma, dev["name"])
        target["sources"].append("ibv_devinfo")
        target["fw_ver"] = _known(target["fw_ver"], dev.get("fw_ver"))
        target["board_id"] = _known(target["board_id"], dev.get("board_id"))
        target["node_guid"] = _known(target["node_guid"], normalise_guid(dev.get("node_guid")))
        target["sys_image_guid"] = _known(target["sys_image_guid"], normalise_guid(dev.get("sys_image_guid")))
        target["vendor_part_id"] = dev.get("vendor_part_id")
        target["transport"] = dev.get("transport")
        for port in dev.get("ports") or []:
            out = _port_for(target, port.get("port"))
            out["sources"].append("ibv_devinfo")
            out["state"] = _known(out["state"], port_state_word(port.get("state")))
            out["state_code"] = _known(out["state_code"], port.get("state_code"))
            out["link_layer"] = _known(out["link_layer"], port.get("link_layer"))
            out["lid"] = _known(out["lid"], port.get("port_lid"))
            out["sm_lid"] = _known(out["sm_lid"], port.get("sm_lid"))
            out["active_mtu"] = port.get("active_mtu")
            out["max_mtu"] = port.get("max_mtu")
    return rdma


# --- which physical part an HCA is -----------------------------------------------------------

_FW_MAJOR_RE = re.compile(r"^\s*(\d+)\.")


def hca_part(dev: Mapping[str, Any]) -> HcaPart:
    """``{"part", "firmware_family", "firmware_group"}``: what HCA firmware is compared within.

    A virtual function shows a generic PCI device id (``vendor_part_id`` 4126, ``15b3:101e``,
    "ConnectX Family mlx5Gen Virtual Function", is shared by ConnectX-6 Dx, ConnectX-7 and
    BlueField VFs), so the part is the board id (the PSID, e.g. ``MT_0000000223``, Azure's
    ``MSF0000000047``) before the HCA type or part id, and the generation is the firmware's major
    number (NVIDIA numbers each adapter family's firmware line on its own: 20.x ConnectX-6,
    22.x ConnectX-6 Dx, 28.x ConnectX-7, 32.x BlueField-3). HCAs of one ``firmware_group`` should
    run one firmware; HCAs of different groups are different products.
    """
    part = dev.get("board_id") or dev.get("hca_type") or (
        None if dev.get("vendor_part_id") is None else "part %s" % dev["vendor_part_id"])
    major = _FW_MAJOR_RE.match(dev.get("fw_ver") or "")
    family = int(major.group(1)) if major else None
    group = None if part is None else "%s%s" % (part, "" if family is None else " (firmware %d.x)" % family)
    return {"part": part, "firmware_family": family, "firmware_group": group}


# --- the whole fact --------------------------------------------------------------------------


def _ip_by_name(ip_addr: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if ip_addr is None:
        return None
    return {entry.get("ifname"): entry for entry in ip_addr.get("interfaces") or []}


def _pcie_degraded(iface: Interface) -> bool:
    pcie = iface.get("pcie")
    if not pcie:
        return False
    gen = pcie["gen_current"] is not None and pcie["gen_max"] is not None and pcie["gen_current"] < pcie["gen_max"]
    width = (pcie["width_current"] is not None and pcie["width_max"] is not None
             and pcie["width_current"] < pcie["width_max"])
    return gen or width


def summarise(interfaces: list[Interface], rdma: list[RdmaDevice], tools_missing: Iterable[str]) -> NicSummary:
    """Judgement-ready lists and counts."""
    return {**_interface_summary(interfaces), **_rdma_summary(rdma), "tools_missing": sorted(tools_missing)}


def _interface_summary(interfaces: list[Interface]) -> InterfaceSummary:
    physical = [iface for iface in interfaces if not iface["virtual"]]
    up = [iface for iface in physical if iface["operstate"] == "up"]
    speeds = [iface["speed_mbps"] for iface in up if iface["speed_mbps"] is not None]
    return {
        "interface_count": len(interfaces),
        "physical_count": len(physical),
        "virtual_count": len(interfaces) - len(physical),
        "physical_up": [iface["name"] for iface in up],
        "physical_down": [iface["name"] for iface in physical if iface["operstate"] != "up"],
        "fastest_mbps": max(speeds) if speeds else None,
        "pcie_degraded": [iface["name"] for iface in physical if _pcie_degraded(iface)],
        "ethtool_failed": [iface["name"] for iface in physical if iface["ethtool_error"]],
    }


def _rdma_summary(rdma: list[RdmaDevice]) -> RdmaSummary:
    ports = [("%s/%s" % (dev["device"], port["port"]), port) for dev in rdma for port in dev["ports"]]
    return {
        "rdma_device_count": len(rdma),
        "rdma_port_count": len(ports),
        "rdma_active_ports": [name for name, port in ports if port["state"] == "Active"],
        "rdma_inactive_ports": [name for name, port in ports if port["state"] != "Active"],
        "rdma_ports_with_errors": [name for name, port in ports if port["errors"]],
    }


def build_nic_facts(sysfs: Mapping[str, Any] | None, ethtool: dict[str, Any] | None = None,
                    ethtool_driver: dict[str, Any] | None = None, ethtool_errors: dict[str, str] | None = None,
                    ibstat: Mapping[str, Any] | None = None,
                    ibv_devinfo: Mapping[str, Any] | None = None, ip_addr: Mapping[str, Any] | None = None,
                    tools_missing: Iterable[str] = (), ethtool_driver_errors: dict[str, str] | None = None) -> NicFacts:
    """``gpufleet_nic`` from the sysfs snapshot and the parsed tool outputs.

    ``ethtool`` / ``ethtool_driver`` map interface names to the parsed ``ethtool IFACE`` /
    ``ethtool -i IFACE`` output, ``ethtool_errors`` / ``ethtool_driver_errors`` to why a run
    failed; the other
    tool arguments are parser results, or None when the tool is not installed.
    """
    ethtool = ethtool or {}
    ethtool_driver = ethtool_driver or {}
    ethtool_errors = ethtool_errors or {}
    driver_errors = ethtool_driver_errors or {}
    net: list[Any] = (sysfs or {}).get("net") or []
    ip_by_name = _ip_by_name(ip_addr)
    interfaces = []
    for entry in net:
        name = entry.get("name")
        interfaces.append(build_interface(entry, ethtool.get(name), ethtool_driver.get(name), ethtool_errors.get(name),
                                          (ip_by_name or {}).get(name), ip_known=ip_by_name is not None,
                                          driver_error=driver_errors.get(name)))
    rdma = _build_rdma((sysfs or {}).get("infiniband") or [], net, ibstat, ibv_devinfo)
    _link_rdma(interfaces, rdma, net)
    return {"interfaces": interfaces, "rdma": rdma, "summary": summarise(interfaces, rdma, tools_missing)}


def _build_rdma(infiniband: list[Any], net: list[Any], ibstat: Mapping[str, Any] | None,
                ibv_devinfo: Mapping[str, Any] | None) -> list[RdmaDevice]:
    """``rdma[]``: the sysfs devices, then what ibstat and ibv_devinfo fill or add, then each one's part."""
    net_by_name = {entry.get("name"): entry for entry in net}
    rdma = [build_rdma_device(entry, net_by_name) for entry in infiniband]
    merge_ibstat(rdma, ibstat)
    merge_ibv_devinfo(rdma, ibv_devinfo)
    for dev in rdma:
        part = hca_part(dev)
        dev["part"] = part["part"]
        dev["firmware_family"] = part["firmware_family"]
        dev["firmware_group"] = part["firmware_group"]
    return rdma


def _link_rdma(interfaces: list[Interface], rdma: list[RdmaDevice], net: list[Any]) -> None:
    """Set each interface's ``rdma_device`` / ``rdma_port``: a port's netdev first, then a device's netdevs, then
    the RDMA devices sysfs lists under the interface."""
    by_iface: dict[str | None, Interface] = {iface["name"]: iface for iface in interfaces}
    for dev in rdma:
        for port in dev["ports"]:
            iface = by_iface.get(port["netdev"])
            if iface is not None and iface["rdma_device"] is None:
                iface["rdma_device"], iface["rdma_port"] = dev["device"], port["port"]
        for name in dev["netdevs"]:
            iface = by_iface.get(name)
            if iface is not None and iface["rdma_device"] is None:
                iface["rdma_device"] = dev["device"]
    for entry in net:
        iface = by_iface[entry.get("name")]
        if iface["rdma_device"] is None and entry.get("rdma_devices"):
            iface["rdma_device"] = entry["rdma_devices"][0]


# --- from the collector's raw results

# raw key -> (parser kind, tool name in summary.tools_missing)
RDMA_TOOLS = {"ibstat": ("ibstat", "ibstat"), "ibv_devinfo": ("ibv-devinfo", "ibv_devinfo")}


def _without_host(host: str, message: str) -> str:
    prefix = "%s: " % host
    return message[len(prefix):] if message.startswith(prefix) else message


def read_ethtool(host: str, runs: dict[str, Any] | None, kind: str) -> tuple[dict[str, Any], dict[str, str], bool]:
    """Per interface: parsed output, or the reason there is none; and whether ethtool is missing.

    A run that exits non-zero marks only its interface (what it printed before, e.g. before a
    crash, is still parsed when it can be); output of a clean run that cannot be read fails.
    """
    parsed: dict[str, Any] = {}
    errors: dict[str, str] = {}
    missing = False
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


def read_rdma_tool(reader: RawReader, key: str, kind: str) -> Any:
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
        raise FactError("%s: `%s` exited %s: %s"
                        % (reader.host, reader.command_label(key), entry["rc"], said)) from None


def build_facts(reader: RawReader) -> NicFactGroup:
    """``{"gpufleet_nic": ...}`` from one host's raw nic_facts results."""
    raw = reader.raw
    sysfs = raw.get("sysfs") or {}
    missing: list[str] = []
    ethtool, ethtool_errors, ethtool_missing = read_ethtool(reader.host, raw.get("ethtool"), "ethtool")
    driver_info, driver_errors, _driver_missing = read_ethtool(reader.host, raw.get("ethtool_driver"), "ethtool-driver")
    if ethtool_missing:
        missing.append("ethtool")
    for name in raw.get("skipped_names") or []:
        ethtool_errors[name] = "name not passed to ethtool: not an interface name"
    has_rdma = bool(sysfs.get("infiniband"))
    tools: dict[str, Any] = {}
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
    facts = build_nic_facts(sysfs, ethtool=ethtool, ethtool_driver=driver_info, ethtool_errors=ethtool_errors,
                            ibstat=tools["ibstat"], ibv_devinfo=tools["ibv_devinfo"], ip_addr=ip_addr,
                            tools_missing=missing, ethtool_driver_errors=driver_errors)
    return {"gpufleet_nic": facts}

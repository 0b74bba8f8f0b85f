# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL networking derived from the whole fleet's NIC facts (pure, controller side).

Input: every node's ``gpufleet_nic`` (docs/facts/nic_facts.md), its installed NCCL version
(``gpufleet_host.versions.nccl.version``), its claim (``gpufleet_claim``), its parsed
``nvidia-smi topo -m`` (``gpufleet_topology``, to keep storage/front-end HCAs at the compute rate out
of the rails when they are not on a GPU's PCIe path) and optional overrides.
Output per node: the NCCL variables to write (``env``: ``NCCL_SOCKET_IFNAME``, ``NCCL_IB_DISABLE``,
``NCCL_IB_HCA``, ``NCCL_IB_GID_INDEX``), a ``why`` sentence per variable, the compute rails and
what was left out. Nothing here does I/O.

NCCL's own list syntax is reproduced by :func:`parse_spec` / :func:`matches` (NCCL
``src/misc/utils.cc`` ``parseStringList``/``matchIfList`` and the callers in ``net_ib.cc`` and
``socket.cc``): a leading ``^`` excludes, then a leading ``=`` makes EVERY entry of the list an
exact match (not only the first), otherwise each entry is a prefix; entries are separated by
``,`` and an entry may end in ``:port`` (the port of an HCA; an interface has none, so any port
matches it). Nothing is trimmed: ``"mlx5_0, mlx5_1"`` has a second entry `` mlx5_1`` that matches
nothing.
"""

from __future__ import annotations

import collections
import ipaddress
import re

from gpufleet.facts.topology import PCIE_PATH_ORDER, normalise_code

# NCCL 2.21 selects the RoCE GID index itself; before it NCCL_IB_GID_INDEX defaults to 0.
AUTO_GID_NCCL = (2, 21, 0)
LINK_LOCAL_V4 = ipaddress.ip_network("169.254.0.0/16")
# Never a cluster interface: loopback, container plumbing, libvirt/docker bridges.
EXCLUDED_PREFIXES = ("docker", "veth", "virbr", "br-")
EXCLUDED_KINDS = ("loopback", "docker", "veth")
# RDMA devices that are not compute rails whatever their state: bonds (front-end/storage) and
# management devices such as Azure's Accelerated Networking VF ``mlx5_an0``.
BOND_RE = re.compile(r"_bond(_\d+)?$")
MANAGEMENT_RE = re.compile(r"_an\d+$")
# Fabrics whose traffic goes through an NCCL net plugin, not NCCL's IB or socket transport.
EFA_RDMA_RE = re.compile(r"^(rdmap|efa)")
# What gpufleet writes into /etc/nccl.conf and the env file: no whitespace, quotes, `$`, `;`...
SAFE_VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:=^@+/%-]*$")
SAFE_KEY_RE = re.compile(r"^NCCL_[A-Z0-9_]+$")
CLAIM_LINK_LAYER = {"ib": "InfiniBand", "roce": "Ethernet"}
# nvidia-smi topo -m paths that keep a NIC on a GPU's own PCIe branch (one or several PCIe switches, no
# host bridge): GPUDirect RDMA runs best there. PHB, NODE and SYS cross the CPU: a NIC at the compute rate
# that is only that close to every GPU is a storage or front-end card.
GPU_LOCAL_PATHS = ("PIX", "PXB")


# --- NCCL's matching rules -------------------------------------------------------------------


def parse_spec(spec):
    """NCCL's reading of an interface/HCA list: ``(exclude, exact, [(prefix, port)])``.

    ``port`` is -1 when the entry has none. As NCCL: ``^`` first, then ``=``; ``:`` ends the
    name and ``atoi`` reads the port (``mlx5_0:x`` is port 0); an empty name is dropped.
    """
    text = "" if spec is None else str(spec)
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    exact = text.startswith("=")
    if exact:
        text = text[1:]
    entries = []
    for item in text.split(","):
        name, colon, rest = item.partition(":")
        if not name:
            continue
        port = -1
        if colon:
            digits = re.match(r"\s*([+-]?\d+)", rest)
            port = int(digits.group(1)) if digits else 0
        entries.append((name, port))
    return exclude, exact, entries


def _name_port(item):
    if isinstance(item, (tuple, list)):
        return str(item[0]), (-1 if item[1] is None else int(item[1]))
    return str(item), -1


def matches(spec, names):
    """The members of ``names`` NCCL would select with ``spec``, in their order.

    ``names``: interface names (``"eth1"``) or ``(device, port)`` pairs (``("mlx5_1", 1)``).
    An empty list selects everything (and ``^`` of an empty list nothing), as in NCCL.
    """
    exclude, exact, entries = parse_spec(spec)
    out = []
    for item in names:
        name, port = _name_port(item)
        if not entries:
            hit = True
        else:
            hit = any((name == prefix if exact else name.startswith(prefix)) and (want == -1 or port == -1 or want == port)
                      for prefix, want in entries)
        if hit != exclude:
            out.append(item)
    return out


def exact_list(names):
    """A list NCCL matches exactly: ``["eth1"]`` -> ``"=eth1"`` (so ``eth10`` is never taken)."""
    return "=" + ",".join(names)


# --- small helpers ---------------------------------------------------------------------------


def version_tuple(text):
    """``"2.18.3"`` -> ``(2, 18, 3)``; None when unreadable."""
    if not text:
        return None
    found = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not found:
        return None
    return tuple(int(part or 0) for part in found.groups())


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name or "")]


def _mbps(iface):
    if iface.get("speed_mbps") is not None:
        return iface["speed_mbps"]
    speed = (iface.get("ethtool") or {}).get("speed_mbps")
    return speed if isinstance(speed, (int, float)) and speed > 0 else None


def _is_up(iface):
    state = iface.get("operstate")
    return state == "up" or (state in ("unknown", None) and iface.get("carrier") is True)


def _driver(iface):
    return iface.get("driver") or (iface.get("ethtool_driver") or {}).get("driver")


def _ipv4_networks(iface):
    """``[(address, network)]`` of the interface's usable IPv4 addresses (not link-local)."""
    out = []
    for addr in iface.get("ipv4") or []:
        try:
            network = ipaddress.ip_network("%s/%s" % (addr.get("address"), addr.get("prefixlen")), strict=False)
            address = ipaddress.ip_address(addr.get("address"))
        except (TypeError, ValueError):
            continue
        if address in LINK_LOCAL_V4 or address.is_loopback:
            continue
        out.append((address, network))
    return out


def _speed_text(mbps):
    return "speed unknown" if mbps is None else "%s Mb/s" % mbps


def _rate_text(key):
    link_layer, rate = key
    return "%s %s" % ("%s Gb/s" % rate if rate is not None else "rate unknown", link_layer or "link layer unknown")


# --- fabrics that need an NCCL net plugin ----------------------------------------------------


def plugin_fabric(nic):
    """``(fabric, reason)`` when the node's fabric is driven by an NCCL net plugin, else None.

    AWS EFA: RDMA devices named ``rdmap*``/``efa*`` or a PCI function bound to ``efa`` (traffic
    goes through aws-ofi-nccl). GCP GPUDirect-TCPX/TCPXO: two or more gVNIC (``gve``) interfaces
    (A3 High has 4 GPU data NICs besides the host NIC, TCPX; A3 Mega 8, TCPXO).
    """
    efa = [dev.get("device") for dev in nic.get("rdma") or [] if EFA_RDMA_RE.match(dev.get("device") or "")]
    efa += [iface["name"] for iface in nic.get("interfaces") or [] if _driver(iface) == "efa"]
    if efa:
        return "aws-efa", ("AWS EFA devices (%s): NCCL reaches them only through the aws-ofi-nccl net plugin (NCCL_NET=OFI, set up by the "
                           "provider's image); gpufleet writes no NCCL network variable that could steer NCCL away from it" % ", ".join(efa))
    gve = [iface["name"] for iface in nic.get("interfaces") or [] if not iface.get("virtual") and _driver(iface) == "gve"]
    if len(gve) >= 2:
        kind = {5: "gcp-tcpx", 9: "gcp-tcpxo"}.get(len(gve), "gcp-tcpx")
        return kind, ("%d gVNIC (gve) interfaces (%s): a GCP A3 GPUDirect-TCPX/TCPXO node (A3 High: 1 host + 4 GPU NICs, TCPX; A3 Mega: 1 + 8, "
                      "TCPXO) whose traffic goes through Google's NCCL net plugin with its own NCCL_SOCKET_IFNAME list and "
                      "NCCL_GPUDIRECTTCPX_* settings; gpufleet writes nothing that could override them" % (len(gve), ", ".join(gve)))
    return None


# --- socket interface ------------------------------------------------------------------------


def _socket_candidates(nic):
    """``(candidates, left_out)``: up interfaces NCCL may bootstrap over, and why others are not."""
    ip_known = any(iface.get("ipv4") is not None for iface in nic.get("interfaces") or [])
    candidates, left_out = [], {}
    for iface in nic.get("interfaces") or []:
        name = iface.get("name") or ""
        if name == "lo" or iface.get("virtual_kind") in EXCLUDED_KINDS or name.startswith(EXCLUDED_PREFIXES):
            left_out[name] = iface.get("virtual_kind") or "excluded name"
            continue
        if not SAFE_VALUE_RE.match(name) or name.startswith(("=", "^")):
            left_out[name] = "name cannot be written safely"
            continue
        if not _is_up(iface):
            left_out[name] = "not up (operstate %s)" % (iface.get("operstate") or "unknown")
            continue
        networks = _ipv4_networks(iface) if ip_known else None
        if ip_known and not networks:
            left_out[name] = "no IPv4 address (link-local 169.254/16 does not count)"
            continue
        candidates.append({"name": name, "mbps": _mbps(iface), "networks": networks})
    candidates.sort(key=lambda cand: (-(cand["mbps"] or 0), _natural(cand["name"])))
    return candidates, left_out, ip_known


def _left_out_text(left_out):
    if not left_out:
        return ""
    return "; left out: %s" % ", ".join("%s (%s)" % (name, why) for name, why in sorted(left_out.items(), key=lambda item: _natural(item[0])))


def derive_socket(nodes_nic, cluster_cidr=None):
    """Per host ``{"value", "why", "warning"}`` (value None when no interface fits) and fleet problems.

    With ``cluster_cidr``: on each node the fastest up interface with an IPv4 address inside it.
    Without: the IPv4 subnet every node has an up interface in, the one whose slowest node is
    fastest (ties: the larger sum, then the lower network); on each node its fastest interface
    there. Nodes whose addresses are unknown (``ip`` missing) get their fastest up interface and a
    warning that the subnet was not verified.
    """
    out, problems = {}, []
    cands = {}
    unknown = []
    for host, nic in nodes_nic.items():
        candidates, left_out, ip_known = _socket_candidates(nic)
        cands[host] = (candidates, left_out)
        if not ip_known:
            unknown.append(host)
    if cluster_cidr:
        network = ipaddress.ip_network(cluster_cidr, strict=False)
        for host, (candidates, left_out) in cands.items():
            if host in unknown:
                problems.append("%s: cannot tell which interface is on gpufleet_cluster_cidr %s: the node's addresses are unknown (ip not installed)"
                                % (host, network))
                out[host] = {"value": None, "why": "addresses unknown", "warning": None}
                continue
            inside = [cand for cand in candidates if any(address in network for address, _net in cand["networks"])]
            if not inside:
                have = ["%s %s" % (cand["name"], ",".join(str(net) for _addr, net in cand["networks"])) for cand in candidates]
                problems.append("%s: no up interface has an address in gpufleet_cluster_cidr %s (up with IPv4: %s)"
                                % (host, network, "; ".join(have) or "none"))
                out[host] = {"value": None, "why": "no interface in %s" % network, "warning": None}
                continue
            best = inside[0]
            out[host] = {"value": exact_list([best["name"]]),
                         "why": "%s: the fastest up interface (%s) with an address in gpufleet_cluster_cidr %s%s"
                                % (best["name"], _speed_text(best["mbps"]), network, _left_out_text(cands[host][1])),
                         "warning": None}
        return out, problems
    known = [host for host in cands if host not in unknown]
    chosen_net = None
    if known:
        per_net = collections.defaultdict(dict)
        for host in known:
            for cand in cands[host][0]:
                for _addr, net in cand["networks"]:
                    per_net[net].setdefault(host, cand)  # candidates are fastest first
        shared = [net for net, by_host in per_net.items() if len(by_host) == len(known)]
        if shared:
            def rank(net):
                speeds = [per_net[net][host]["mbps"] or 0 for host in known]
                return (-min(speeds), -sum(speeds), int(net.network_address), net.prefixlen)
            chosen_net = sorted(shared, key=rank)[0]
        else:
            for host in known:
                nets = ["%s %s" % (cand["name"], ",".join(str(net) for _addr, net in cand["networks"])) for cand in cands[host][0]]
                problems.append("%s: no IPv4 subnet is shared by every node; this node's up interfaces: %s%s. Set gpufleet_cluster_cidr or "
                                "override NCCL_SOCKET_IFNAME" % (host, "; ".join(nets) or "none", _left_out_text(cands[host][1])))
    for host, (candidates, left_out) in cands.items():
        peers = len(cands) - 1
        if host in known:
            if chosen_net is None:
                out[host] = {"value": None, "why": "no shared IPv4 subnet", "warning": None}
                continue
            best = per_net[chosen_net][host]
            others = [cand["name"] for cand in candidates if cand is not best]
            shared_with = "the IPv4 subnet this node shares with its %d peer%s" % (peers, "" if peers == 1 else "s") if peers else \
                "its fastest IPv4 subnet (a single node: no peer to share one with)"
            why = ("%s: the fastest up interface (%s) in %s, %s%s%s"
                   % (best["name"], _speed_text(best["mbps"]), chosen_net, shared_with,
                      "; other up interfaces: %s" % ", ".join(others) if others else "", _left_out_text(left_out)))
            out[host] = {"value": exact_list([best["name"]]), "why": why, "warning": None}
            continue
        if not candidates:
            problems.append("%s: no up interface NCCL could bootstrap over%s" % (host, _left_out_text(left_out)))
            out[host] = {"value": None, "why": "no up interface", "warning": None}
            continue
        best = candidates[0]
        warning = ("NCCL_SOCKET_IFNAME: %s chosen without checking its subnet: the node's addresses are unknown (ip not installed); "
                   "set gpufleet_cluster_cidr or override NCCL_SOCKET_IFNAME if the nodes do not reach each other there" % best["name"])
        out[host] = {"value": exact_list([best["name"]]),
                     "why": "%s: the fastest up interface (%s); its subnet was not verified (addresses unknown)%s"
                            % (best["name"], _speed_text(best["mbps"]), _left_out_text(left_out)),
                     "warning": warning}
    return out, problems


# --- RDMA rails ------------------------------------------------------------------------------


def _ports(nic):
    for dev in nic.get("rdma") or []:
        for port in dev.get("ports") or []:
            yield dev, port


def _claim_rail(claim):
    """``(link_layer, gbps)`` of the claim's compute NICs, ``("none", None)`` for Ethernet-only, None when silent."""
    nics = (claim or {}).get("nics")
    if not isinstance(nics, list):
        return None
    compute = [nic for nic in nics if isinstance(nic, dict) and nic.get("role") == "compute"]
    rdma = [nic for nic in compute if nic.get("type") in CLAIM_LINK_LAYER]
    if rdma:
        return CLAIM_LINK_LAYER[rdma[0]["type"]], rdma[0].get("gbps")
    if compute:
        return "none", None
    return None


def _port_groups(nic):
    """``(candidates, excluded)``: Active non-bond, non-management ports, and why the rest are out."""
    candidates, excluded = [], {}
    for dev, port in _ports(nic):
        name = dev.get("device") or ""
        label = "%s:%s" % (name, port.get("port"))
        if BOND_RE.search(name):
            excluded[label] = "a bond (front-end/storage), never a compute rail"
        elif MANAGEMENT_RE.search(name):
            excluded[label] = "a management/accelerated-networking device (%s), not a compute rail" % name
        elif not SAFE_VALUE_RE.match(name):
            excluded[label] = "device name cannot be written safely"
        elif port.get("state") != "Active":
            excluded[label] = "%s%s" % (port.get("state") or "state unknown",
                                        " / %s" % port["physical_state"] if port.get("physical_state") else "")
        else:
            candidates.append((dev, port, (port.get("link_layer"), port.get("rate_gbps"))))
    return candidates, excluded


def nic_gpu_paths(topology):
    """``{rdma_device: (code, gpus)}``: each NIC's nearest path to any GPU in a parsed ``nvidia-smi topo -m``.

    ``topology`` is ``gpufleet_topology`` (the ``topo`` parser's result): NIC rows are named as the
    matrix names them (``NIC0``) and mapped to RDMA devices (``mlx5_0``) through the parser's
    ``device`` (its NIC Legend, or the row name when the header already uses device names); a row
    without a device is left out. SOC is read as SYS. ``gpus`` says which GPUs are at that distance
    (``"every GPU"`` or ``"GPU0, GPU3"``). Empty when the matrix is unknown or has no GPU.
    """
    if not isinstance(topology, dict):
        return {}
    links = topology.get("links") or {}
    gpus = [gpu.get("name") for gpu in topology.get("gpus") or [] if isinstance(gpu, dict) and gpu.get("name")]
    out = {}
    for nic in topology.get("nics") or []:
        if not isinstance(nic, dict) or not nic.get("device"):
            continue
        row = links.get(nic.get("name")) or {}
        codes = {gpu: normalise_code(row[gpu]) for gpu in gpus if row.get(gpu)}
        if not codes:
            continue
        nearest = min(codes.values(), key=_path_rank)
        at_nearest = [gpu for gpu in gpus if codes.get(gpu) == nearest]
        out[nic["device"]] = (nearest, "every GPU" if len(at_nearest) == len(gpus) else ", ".join(at_nearest))
    return out


def _path_rank(code):
    return PCIE_PATH_ORDER.index(code) if code in PCIE_PATH_ORDER else len(PCIE_PATH_ORDER)


def _on_gpu_paths(rails, topology):
    """``(kept, left_out, note)``: the compute-rate ports on a GPU's PCIe path, the others with why, and a note.

    A port is kept when its device is PIX or PXB to at least one GPU in ``nvidia-smi topo -m``. Without
    a matrix naming the NICs every port is kept and the note says the path was not checked. When no port
    at all is PIX/PXB (a VM whose PCIe tree is virtualised, a server without PCIe switches) the matrix
    cannot tell rails from storage: every port is kept and the note says so. A device the matrix does
    not show is kept, named in the note.
    """
    if not rails:
        return rails, {}, None
    if not isinstance(topology, dict):
        return rails, {}, "PCIe path to the GPUs not checked: no nvidia-smi topo -m facts (gpufleet_topology)"
    paths = nic_gpu_paths(topology)
    if not paths:
        return rails, {}, ("PCIe path to the GPUs not checked: nvidia-smi topo -m names no NIC as an RDMA device "
                           "next to a GPU")
    devices = sorted({dev["device"] for dev, _port, _key in rails}, key=_natural)
    unseen = [device for device in devices if device not in paths]
    unseen_text = "; not in the nvidia-smi topo -m matrix, kept unchecked: %s" % ", ".join(unseen) if unseen else ""
    if not any(paths[device][0] in GPU_LOCAL_PATHS for device in devices if device in paths):
        nearest = sorted({paths[device][0] for device in devices if device in paths}, key=_path_rank)
        return rails, {}, ("PCIe path to the GPUs not told apart: nvidia-smi topo -m shows none of these ports PIX/PXB "
                           "to a GPU (nearest: %s), as on a VM whose PCIe tree is virtualised or a server without PCIe "
                           "switches; all kept%s" % (", ".join(nearest), unseen_text))
    kept, left_out = [], {}
    for dev, port, key in rails:
        path = paths.get(dev["device"])
        if path is None or path[0] in GPU_LOCAL_PATHS:
            kept.append((dev, port, key))
            continue
        left_out["%s:%s" % (dev["device"], port["port"])] = (
            "%s at the compute rate, but not on a GPU's PCIe path: %s at best (to %s) in nvidia-smi topo -m, "
            "the rails are PIX/PXB to a GPU: storage/front-end" % (_rate_text(key), path[0], path[1]))
    return kept, left_out, "PCIe path checked with nvidia-smi topo -m: each rail is PIX/PXB to a GPU%s" % unseen_text


def _majority(keys):
    counts = collections.Counter(keys)
    if not counts:
        return None
    return sorted(counts.items(), key=lambda item: (-item[1], -(item[0][1] or 0), item[0][0] != "InfiniBand"))[0][0]


def _rail_key_for(claim, candidates, fleet_key):
    """The (link_layer, rate) of this node's compute rails and where that came from."""
    claimed = _claim_rail(claim)
    if claimed is not None:
        return claimed, "the claim's compute NICs"
    keys = [key for _dev, _port, key in candidates]
    if fleet_key is not None and fleet_key in keys:
        return fleet_key, "the fleet's majority of Active RDMA ports"
    return _majority(keys), "this node's majority of Active RDMA ports"


def _on_rail(key, rail):
    link_layer, rate = key
    if link_layer != rail[0]:
        return False
    return rail[1] is None or rate is None or float(rate) == float(rail[1])


def _ipv4_mapped(gid):
    return (gid or "").lower().startswith("0000:0000:0000:0000:0000:ffff:")


def _gid_index(rails):
    """Lowest GID index that is RoCE v2 with an IPv4-mapped GID on every rail port; None when none/unknown."""
    common = None
    for _dev, port, _key in rails:
        indices = {gid.get("index") for gid in port.get("gids") or []
                   if gid.get("index") is not None and "v2" in (gid.get("type") or "").lower() and _ipv4_mapped(gid.get("gid"))}
        common = indices if common is None else common & indices
    return min(common) if common else None


# --- overrides -------------------------------------------------------------------------------


def validate_overrides(overrides, where):
    """Problems with an overrides mapping (key and value syntax only)."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        return ["%s: must be a mapping of NCCL_* variables, got %s" % (where, type(overrides).__name__)]
    problems = []
    for key, value in overrides.items():
        if not isinstance(key, str) or not SAFE_KEY_RE.match(key):
            problems.append("%s: %r is not an NCCL_* variable name" % (where, key))
            continue
        if value is None:
            continue
        if isinstance(value, (dict, list)) or not SAFE_VALUE_RE.match(_text(value)):
            problems.append("%s.%s: value %r has characters gpufleet will not write into nccl.conf or an env file "
                            "(allowed: letters, digits and _ . , : = ^ @ + / %% -)" % (where, key, value))
    return problems


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def check_override(host, key, value, nic):
    """Problems when an NCCL_SOCKET_IFNAME / NCCL_IB_HCA override selects nothing usable on ``nic``."""
    value = _text(value)
    if key == "NCCL_SOCKET_IFNAME":
        names = [iface.get("name") for iface in nic.get("interfaces") or []]
        picked = matches(value, names)
        if not picked:
            return ["%s: override NCCL_SOCKET_IFNAME=%s matches no interface on the node (NCCL matching rules; interfaces: %s)"
                    % (host, value, ", ".join(sorted(names, key=_natural)) or "none")]
        by_name = {iface.get("name"): iface for iface in nic.get("interfaces") or []}
        # NCCL binds only interfaces with an address; that is checked where the addresses are known.
        ip_known = any(iface.get("ipv4") is not None for iface in nic.get("interfaces") or [])
        usable = [name for name in picked if name != "lo" and _is_up(by_name[name])
                  and (not ip_known or by_name[name].get("ipv4") or by_name[name].get("ipv6"))]
        if not usable:
            return ["%s: override NCCL_SOCKET_IFNAME=%s matches only %s, none of them up%s (lo does not count)"
                    % (host, value, ", ".join(picked), " with an IP address" if ip_known else "")]
        return []
    if key == "NCCL_IB_HCA":
        ports = [(dev.get("device"), port.get("port")) for dev, port in _ports(nic)]
        picked = matches(value, ports)
        if not picked:
            return ["%s: override NCCL_IB_HCA=%s matches no RDMA device/port on the node (NCCL matching rules; ports: %s)"
                    % (host, value, ", ".join("%s:%s" % pair for pair in ports) or "none")]
        state = {(dev.get("device"), port.get("port")): port.get("state") for dev, port in _ports(nic)}
        if not any(state[pair] == "Active" for pair in picked):
            return ["%s: override NCCL_IB_HCA=%s matches only ports that are not Active: %s"
                    % (host, value, ", ".join("%s:%s (%s)" % (pair[0], pair[1], state[pair] or "state unknown") for pair in picked))]
    return []


# --- the whole derivation --------------------------------------------------------------------


def derive(nodes, cluster_cidr=None, overrides=None, host_overrides=None):
    """NCCL settings for every node of the fleet.

    ``nodes``: ``{host: {"nic": gpufleet_nic, "nccl_version": "2.18.3"|None, "claim": dict|None,
    "topology": gpufleet_topology|None}}``. With a topology, compute-rate ports whose device is not PIX
    or PXB to any GPU are left out of the rails (see :func:`_on_gpu_paths`); without one, the
    ``NCCL_IB_HCA`` explanation says the PCIe path was not checked.
    Returns ``{"hosts": {host: {env, why, fabric, rails, excluded, warnings, overridden}},
    "problems": [...], "fleet": {ib, rdma_hosts, without_rails, plugin_fabrics}}``. A problem names its
    host; the role refuses to write anything while there is one. ``NCCL_IB_DISABLE`` is per node: ``0``
    on every node with Active compute rails, ``1`` on a node without (``without_rails``), which the
    benchmarks leave out of the RDMA runs; ``ib`` is true when any node has rails.
    """
    problems = []
    problems += validate_overrides(overrides, "nccl_env_overrides")
    for host, host_over in (host_overrides or {}).items():
        problems += validate_overrides(host_over, "nccl_env_host_overrides.%s" % host)
    if cluster_cidr:
        try:
            ipaddress.ip_network(str(cluster_cidr), strict=False)
        except ValueError as exc:
            problems.append("gpufleet_cluster_cidr: %s" % exc)
            cluster_cidr = None
    missing = [host for host, node in nodes.items() if not isinstance(node.get("nic"), dict)]
    problems += ["%s: no NIC facts (gpufleet_nic): run the facts role first, or see why nic_facts failed on it" % host for host in missing]
    if problems:
        return {"hosts": {}, "problems": problems, "fleet": {}}

    hosts = {host: {"env": {}, "why": {}, "fabric": None, "rails": [], "excluded": {}, "warnings": [], "overridden": []} for host in nodes}
    plugin = {}
    for host, node in nodes.items():
        found = plugin_fabric(node["nic"])
        if found:
            plugin[host] = found
            hosts[host]["fabric"], hosts[host]["why"]["fabric"] = found
            hosts[host]["warnings"].append("%s: configured by its NCCL net plugin, not by gpufleet" % found[0])

    # Socket interface (every node that is not a plugin fabric).
    socket_nodes = {host: node["nic"] for host, node in nodes.items() if host not in plugin}
    socket_over = {host for host in socket_nodes if "NCCL_SOCKET_IFNAME" in _merged(overrides, host_overrides, host)}
    derived = {host: nic for host, nic in socket_nodes.items() if host not in socket_over}
    socket, socket_problems = derive_socket(derived, cluster_cidr) if derived else ({}, [])
    problems += socket_problems
    for host, chosen in socket.items():
        if chosen["value"]:
            hosts[host]["env"]["NCCL_SOCKET_IFNAME"] = chosen["value"]
            hosts[host]["why"]["NCCL_SOCKET_IFNAME"] = chosen["why"]
        if chosen["warning"]:
            hosts[host]["warnings"].append(chosen["warning"])

    # RDMA rails.
    groups = {host: _port_groups(nodes[host]["nic"]) for host in socket_nodes}
    fleet_key = _majority([key for host in groups if _claim_rail(nodes[host].get("claim")) is None for _d, _p, key in groups[host][0]])
    rails_of = {}
    pcie_notes = {}
    for host, (candidates, excluded) in groups.items():
        key, source = _rail_key_for(nodes[host].get("claim"), candidates, fleet_key)
        rails = [] if key is None or key[0] == "none" else [(dev, port, pkey) for dev, port, pkey in candidates if _on_rail(pkey, key)]
        rails.sort(key=lambda rail: (_natural(rail[0]["device"]), rail[1].get("port") or 0))
        for dev, port, pkey in candidates:
            if key is not None and key[0] == "none":
                excluded["%s:%s" % (dev["device"], port["port"])] = "the claim's compute network is Ethernet"
            elif not any(port is rail_port for _d, rail_port, _k in rails):
                excluded["%s:%s" % (dev["device"], port["port"])] = ("%s, the compute rails are %s: storage/front-end"
                                                                     % (_rate_text(pkey), _rate_text(key)))
        rails, off_path, pcie_notes[host] = _on_gpu_paths(rails, nodes[host].get("topology"))
        excluded.update(off_path)
        rails_of[host] = (rails, key, source)
        hosts[host]["rails"] = ["%s:%s" % (dev["device"], port["port"]) for dev, port, _k in rails]
        hosts[host]["excluded"] = dict(sorted(excluded.items(), key=lambda item: _natural(item[0])))
    without = sorted((host for host in nodes if host in plugin or not rails_of[host][0]), key=_natural)
    # IB is decided per node: a node without an Active compute rail runs over sockets and is left out of the
    # RDMA runs (playbooks/benchmark.yml reads its NCCL_IB_DISABLE=1); it never turns IB off on the nodes with rails.
    rdma_hosts = sorted((host for host in socket_nodes if rails_of[host][0]), key=_natural)
    for host in socket_nodes:
        rails, key, source = rails_of[host]
        entry = hosts[host]
        left = _left_out_text(entry["excluded"])
        if rails:
            entry["env"]["NCCL_IB_DISABLE"] = "0"
            entry["why"]["NCCL_IB_DISABLE"] = (
                "0: every node has Active RDMA ports on its compute rails" if not without else
                "0: this node has %d Active RDMA port(s) on its compute rails; the node(s) without one (%s) run over "
                "sockets, left out of the RDMA runs" % (len(rails), ", ".join(without)))
            entry["env"]["NCCL_IB_HCA"] = exact_list(entry["rails"])
            entry["why"]["NCCL_IB_HCA"] = (
                "%s: the Active %s ports (rails by %s), matched exactly with '=' and ':port' so no other device "
                "sharing a prefix is taken; %s%s"
                % (exact_list(entry["rails"]), _rate_text(key), source, pcie_notes[host], left))
            entry["fabric"] = "roce" if key[0] == "Ethernet" else "ib"
            if key[0] == "Ethernet":
                _gid(entry, rails, nodes[host].get("nccl_version"))
        else:
            entry["env"]["NCCL_IB_DISABLE"] = "1"
            others = "; left out of the RDMA runs of %s" % ", ".join(rdma_hosts) if rdma_hosts else ""
            entry["why"]["NCCL_IB_DISABLE"] = (
                "1: not every node has Active RDMA ports on compute rails (none on: %s; this node has none)%s%s"
                % (", ".join(without), left, others))
            entry["fabric"] = "socket"

    # Overrides win; one that selects nothing usable on its node is refused.
    for host in nodes:
        merged = _merged(overrides, host_overrides, host)
        for key in sorted(merged):
            value = merged[key]
            if host in plugin:
                problems.append("%s: override %s refused: the node's fabric is %s, configured by its NCCL net plugin" % (host, key, plugin[host][0]))
                continue
            if value is None:
                hosts[host]["env"].pop(key, None)
                hosts[host]["why"][key] = "removed by override"
            else:
                problems += check_override(host, key, value, nodes[host]["nic"])
                hosts[host]["env"][key] = _text(value)
                hosts[host]["why"][key] = "%s: override" % _text(value)
            hosts[host]["overridden"].append(key)
    fleet = {"ib": bool(rdma_hosts), "rdma_hosts": rdma_hosts, "without_rails": without,
             "plugin_fabrics": {host: found[0] for host, found in plugin.items()}}
    return {"hosts": hosts, "problems": problems, "fleet": fleet}


def _merged(overrides, host_overrides, host):
    merged = dict(overrides or {})
    merged.update((host_overrides or {}).get(host) or {})
    return merged


def _gid(entry, rails, nccl_version):
    version = version_tuple(nccl_version)
    if version is not None and version >= AUTO_GID_NCCL:
        entry["why"]["NCCL_IB_GID_INDEX"] = ("not set: NCCL %s selects the RoCE GID index itself (since 2.21)" % nccl_version)
        return
    said = "NCCL %s predates automatic GID selection (2.21) and uses GID index 0 unless told" % nccl_version if version else \
        "the installed NCCL version is unknown (it may predate automatic GID selection, 2.21)"
    index = _gid_index(rails)
    if index is None:
        entry["why"]["NCCL_IB_GID_INDEX"] = ("not set: %s, but the rails' GID tables show no RoCE v2 IPv4-mapped index common to all of "
                                             "them (or were not read)" % said)
        entry["warnings"].append("NCCL_IB_GID_INDEX not chosen: %s; override it (commonly 3, RoCE v2 IPv4 on mlx5) after checking "
                                 "show_gids" % said)
        return
    entry["env"]["NCCL_IB_GID_INDEX"] = str(index)
    entry["why"]["NCCL_IB_GID_INDEX"] = "%s: %s; index %s is RoCE v2 with an IPv4-mapped GID on every rail" % (index, said, index)


def summary_lines(host, chosen):
    """What one node got and why, one line per variable, for a person to read."""
    lines = ["%s: fabric %s" % (host, chosen.get("fabric") or "unknown")]
    for key in sorted(chosen.get("why") or {}):
        value = (chosen.get("env") or {}).get(key)
        lines.append("  %s%s - %s" % (key, "=%s" % value if value is not None else "", chosen["why"][key]))
    lines += ["  warning: %s" % warning for warning in chosen.get("warnings") or []]
    return lines

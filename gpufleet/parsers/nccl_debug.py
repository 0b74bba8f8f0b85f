# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for NCCL_DEBUG=INFO/TRACE log lines (KIND ``nccl-debug``).

NCCL writes ``host:pid:tid [dev] NCCL INFO ...`` (WARN lines carry ``file.cc:line``
before ``NCCL WARN``; TRACE lines an elapsed time and ``func:line``; NCCL >= 2.26 puts a
``[YYYY-MM-DD hh:mm:ss] `` wall-clock stamp before WARN lines). Authors often strip the
``host:pid:tid [dev]`` part; such lines are read too. Launcher prefixes (``srun -l`` ``0: ``,
``mpirun --tag-output`` ``[1,0]<stdout>:``, Intel MPI ``[0] ``, kubectl ISO time stamps)
are removed first. Lines that are not NCCL lines are ignored.

``parse_nccl_debug(text)`` returns a dict with these keys (a public contract):

- ``nccl_version`` (str|None): ``"2.18.3"`` from ``NCCL version 2.18.3+cuda12.2``.
- ``nccl_version_full`` (str|None): ``"2.18.3+cuda12.2"`` as printed.
- ``cuda_driver_version`` (int|None): from ``cudaDriverVersion 12020``.
- ``hosts`` (list[str]): distinct host names of the prefixed lines, in order of appearance.
- ``nccl_lines`` (int): number of NCCL INFO/WARN/TRACE lines read.
- ``nranks`` (int|None): largest ``nranks N`` / ``nRanks N`` seen; ``nnodes`` (int|None)
  from ``nNodes N``.
- ``using_network`` (str|None): the network class NCCL used: ``"IB"`` (internal IB verbs,
  also RoCE, and IBext* plugins such as the SHARP plugin), ``"Socket"``, ``"OFI"``
  (aws-ofi-nccl / libfabric) or the name NCCL printed for other plugins. Taken from
  ``Assigned NET plugin X to comm``, else ``Using network X``, else from the ``via NET/...``
  transports.
- ``net_plugin`` (str|None): the NET plugin name exactly as NCCL printed it for the
  communicator (``IB``, ``Socket``, ``IBext_v6``, ``AWS Libfabric``...).
- ``using_networks`` (list[str]): every distinct ``Using network X`` / ``Assigned NET plugin
  X`` name (more than one means ranks disagree).
- ``net_plugin_library`` (str|None): path from ``Plugin Path : ...``; ``external_net_plugin``
  (str|None): the external plugin's name (``P2P plugin IBext_v6``, ``Initialized NET plugin
  AWS Libfabric``...) or None when NCCL said it used its internal implementation or said
  nothing.
- ``net_plugins_initialized`` (list[str]): names from ``Initialized NET plugin X``.
- ``net_plugin_failures`` (list[{line, text}]): ``Failed to initialize NET plugin X``,
  ``plugin/net.cc:N -> N`` error returns, ``NET/OFI ... Invalid/failed`` lines.
- ``ofi_provider`` (str|None): ``NET/OFI Selected Provider is verbs;ofi_rxm`` -> ``verbs;ofi_rxm``.
- ``net_devices`` (list[dict]): from ``NET/IB : Using [0]mlx5_0:1/IB ...`` and
  ``NET/Socket : Using [0]eth0:10.0.0.1<0> ...``, one per host and device:
  ``{host, transport ('IB'|'Socket'), index (int), name (str), port (int|None),
  kind ('IB'|'RoCE'|'Socket'), sharp (bool), address (str|None), line (int)}``.
- ``relaxed_ordering`` (bool|None): ``[RO]`` in the ``NET/IB : Using`` line.
- ``oob_interfaces`` / ``bootstrap_interfaces`` (list[str]): interface names of
  ``; OOB ens7:...`` and ``Bootstrap : Using ens7:...``.
- ``ib_disabled_or_absent`` (list[{line, text}]): lines saying IB is not used
  (``NET/IB : No device found.``, ``Failed to initialize NET plugin IB``, ``Failed to open
  libibverbs``, ``Unable to open device``, ``Call to ibv_open_device failed``, ``dlvsym
  failed``, ``NCCL_IB_DISABLE set by environment to 1``, an empty ``NET/IB : Using [RO]``,
  ``libibverbs: Warning: couldnt load driver``).
- ``hca_evidence`` (list[str]): why the log shows RDMA hardware exists (devices listed by
  NET/IB, devices that could not be opened, an mlx5 driver that failed to load, IPoIB
  interfaces such as ``ib0``/``ibp24s0`` used by NET/Socket, ``NCCL_IB_HCA`` set).
- ``fallback_to_socket`` (bool): NCCL used ``Socket`` for the network although
  ``hca_evidence`` shows HCAs: the judgement "RDMA hardware present, TCP used".
- ``via`` (dict[str, int]): count of each ``via X`` transport string as printed
  (``NET/IB/1/GDRDMA``, ``P2P/IPC``, ``SHM/direct/direct``...).
- ``transports`` (dict[str, int]): the same counts by class: ``NET/IB``, ``NET/Socket``,
  ``NET/<plugin>``, ``P2P/IPC``, ``P2P/direct pointer``, ``P2P/CUMEM``, ``SHM``, ``NVLS``,
  ``COLLNET``...
- ``net_vias`` (list[dict]): each distinct network transport of the ``Channel``/``Ring`` lines per
  host, in order of first appearance: ``{host, via (as printed), network ('IB', 'Socket' or the
  plugin name), dev (int: the index into that host's ``NET/... : Using`` list), gdrdma (bool),
  count, line (the first line printing it)}``.
- ``networks_by_host`` (dict[str, list[str]]): host (``""`` for lines without a host prefix) ->
  the network classes (as ``using_network``) its ranks named (``Using network X``, ``Assigned NET
  plugin X``) or connected over (``via NET/X/...``).
- ``channels`` (dict): ``ring`` (int|None, the ``MM`` of ``Channel NN/MM : ranks``),
  ``coll``, ``collnet``, ``nvls``, ``p2p`` (int|None, from ``N coll channels, N collnet
  channels, N nvls channels, N p2p channels``).
- ``gdrdma`` (bool|None): True when a NET transport uses GDRDMA (or only ``GPU Direct RDMA
  Enabled`` lines exist), False when NET transports exist without it or only ``GPU Direct
  RDMA Disabled`` lines exist, None when the log says nothing.
- ``dmabuf`` (bool|None): ``DMA-BUF is available`` seen.
- ``nvls_available`` (bool|None): ``NVLS multicast support is (not) available``.
- ``nvls_disabled_by_env`` (bool): ``NCCL_NVLS_ENABLE set by environment to 0``.
- ``collnet_enabled_by_env`` (bool|None): ``NCCL_COLLNET_ENABLE set by environment to N``.
- ``mnnvl`` (bool|None): ``MNNVL 0|1`` of the ``comm ... nRanks`` lines (True if any is 1).
- ``warnings`` (list[{line, text, host}]): NCCL WARN lines; a WARN that NCCL printed over
  several lines (NCCL >= 2.27 ``NET/IB:`` completion errors) is joined with single spaces.
- ``elided`` (bool): an author elision line (``...``, ``[...]``) was seen.

Raises :class:`ParseError` for empty input or input without any NCCL line, and names the
line of a damaged ``NET/IB|NET/Socket : Using`` device list or a damaged ``via NET/...``
transport.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import ParseError, numbered_lines, strip_ansi

KIND = "nccl-debug"

# A line as prepare_lines gives it: (1-based number, text without launcher prefix, prefix kind, prefix rank).
PreparedLine = tuple[int, str, str | None, int | None]

# Launcher prefixes: mpirun --tag-output, srun -l, Intel MPI / MPICH -prepend-rank.
_TAG_OUTPUT_RE = re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr|stddiag)>:\s?")
_SRUN_RE = re.compile(r"^\s*(\d+):(?: |$)")
_INTEL_RE = re.compile(r"^\[(\d+)\] ")
# Time stamps: kubectl --timestamps (ISO) and NCCL >= 2.26 WARN wall clock.
_ISO_TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+")
_BRACKET_TS_RE = re.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?\]\s*")

# host:pid:tid [dev] [file.cc:line | elapsed func:line] NCCL LEVEL message
_NCCL_RE = re.compile(
    r"^(?:(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>-?\d+)\]\s+)?"
    r"(?:(?:[\w.+/-]+:\d+|\d+\.\d+)\s+){0,2}"
    r"NCCL\s+(?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)$"
)
_VERSION_RE = re.compile(r"^NCCL version (?P<full>(?P<ver>\d+\.\d+\.\d+)\S*)")
_ELISION_RE = re.compile(r"^\s*(?:\.{3,}|\[\.{3}\]|\u2026)\s*$")


def prepare_lines(text: object) -> list[PreparedLine]:
    """Return ``[(n, line, prefix_kind, prefix_rank)]`` with launcher prefixes removed.

    ``line`` has ANSI escapes, launcher prefixes and time stamps removed and is
    right-stripped; ``n`` is the 1-based line number in ``text``. Raises ParseError when
    ``text`` is not a string or holds nothing but whitespace.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text", kind=KIND)
    if not text.strip():
        raise ParseError("empty input", kind=KIND)
    result: list[PreparedLine] = []
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).replace("\r", "")
        prefix_kind: str | None = None
        prefix_rank: int | None = None
        for _attempt in range(3):
            match = _ISO_TS_RE.match(line)
            if match:
                line = line[match.end():]
                continue
            match = _TAG_OUTPUT_RE.match(line)
            if match:
                prefix_kind, prefix_rank = "mpirun-tag-output", int(match.group(2))
                line = line[match.end():]
                continue
            match = _SRUN_RE.match(line)
            if match:
                prefix_kind, prefix_rank = "srun", int(match.group(1))
                line = line[match.end():]
                continue
            match = _INTEL_RE.match(line)
            if match:
                prefix_kind, prefix_rank = "mpi-rank", int(match.group(1))
                line = line[match.end():]
                continue
            break
        result.append((number, line.rstrip(), prefix_kind, prefix_rank))
    return result


def match_nccl_line(line: str) -> re.Match[str] | None:
    """Match an NCCL INFO/WARN/TRACE line (with or without its host prefix), else None."""
    stripped = _BRACKET_TS_RE.sub("", line, count=1).strip()
    return _NCCL_RE.match(stripped)


def is_elision(line: str) -> bool:
    """True for an author's elision line (``...``, ``[...]``)."""
    return bool(_ELISION_RE.match(line))


def version_of(line: str) -> tuple[str, str] | tuple[None, None]:
    """``(version, full)`` from ``NCCL version 2.x.y+cudaZ`` at the start of ``line``."""
    match = _VERSION_RE.match(line.strip())
    if match:
        return match.group("ver"), match.group("full")
    return None, None


_NET_USING_RE = re.compile(r"^NET/(?P<transport>IB|Socket)\s*:\s*Using\s*(?P<rest>.*)$")
_IB_DEV_RE = re.compile(r"^\[(?P<index>\d+)\](?P<name>[^\s:\[\]]+):(?P<port>\d+)/(?P<kind>IB|RoCE)(?P<extra>(?:/[A-Za-z0-9_]+)*)$")
_SOCK_DEV_RE = re.compile(r"^\[(?P<index>\d+)\](?P<name>[^\s:\[\]]+):(?P<addr>\S+?)(?:<\d+>)?$")
_VIA_RE = re.compile(r"\bvia\s+(?P<via>\S.*?)\s*$")
# NET/<plugin>/<dev>[(<proxy rank>)][/GDRDMA[(PCI)]][/Shared]  (PXN prints the proxy rank)
_NET_VIA_RE = re.compile(r"^NET/(?P<plugin>[^/]+)/\d+(?:\(\d+\))?(?:/[A-Za-z]+(?:\([A-Za-z0-9]+\))?)*$")
# P2P/{direct pointer|IPC|CUMEM|MNNVL}[/read][/CE], older P2P/indirect/<rank>[<bus>]
_P2P_VIA_RE = re.compile(r"^P2P/(?P<sub>IPC|direct pointer|CUMEM|MNNVL|indirect)(?:/[\w\[\]]+)*$")
_CHANNELS_RE = re.compile(r"\b(\d+) (coll|collnet|nvls|p2p) channels(?! per peer)")
_RING_CHANNEL_RE = re.compile(r"^Channel \d+/(\d+)\s*:\s*(?:-?\d+\s*)+$")
_IPOIB_RE = re.compile(r"^ib[a-z0-9]*\d")

_IB_OFF_PATTERNS = (
    re.compile(r"NET/IB\s*:\s*No device found"),
    re.compile(r"Failed to initialize NET plugin IB"),
    re.compile(r"Failed to open libibverbs"),
    re.compile(r"NET/IB\s*:\s*Unable to open device"),
    re.compile(r"Call to ibv_open_device failed"),
    re.compile(r"dlvsym failed"),
    re.compile(r"NCCL_IB_DISABLE set by environment to 1"),
    re.compile(r"NET/IB\s*:\s*Using\s*(?:\[RO\])?\s*;"),
)


def _network_class(name: str | None) -> str | None:
    """Map a NET plugin name to 'IB' | 'Socket' | 'OFI' | the name itself."""
    if name is None:
        return None
    low = name.lower()
    if low == "ib" or low.startswith("ibext") or low.startswith("ib_"):
        return "IB"
    if low == "socket":
        return "Socket"
    if "libfabric" in low or low.startswith("ofi") or low.startswith("aws"):
        return "OFI"
    return name


def _transport_class(via: str) -> str:
    if via.startswith("NET/"):
        return "NET/" + via.split("/")[1]
    if via.startswith("P2P/"):
        return "P2P/" + via.split("/")[1]
    return via.split("/")[0]


def _add_unique(items: list[Any], value: Any) -> None:
    if value is not None and value not in items:
        items.append(value)


def _parse_device_list(transport: str, rest: str, number: int, host: str | None) -> list[dict[str, Any]]:
    """Devices of a ``NET/IB : Using ...`` or ``NET/Socket : Using ...`` line."""
    devices: list[dict[str, Any]] = []
    head = rest.split(";", 1)[0].strip()
    tokens = head.split()
    for token in tokens:
        if token == "[RO]":
            continue
        if transport == "IB":
            match = _IB_DEV_RE.match(token)
            if not match:
                raise ParseError("damaged NET/IB device %r" % token, line=number, kind=KIND)
            extra = [part for part in match.group("extra").split("/") if part]
            devices.append(
                {
                    "host": host,
                    "transport": "IB",
                    "index": int(match.group("index")),
                    "name": match.group("name"),
                    "port": int(match.group("port")),
                    "kind": match.group("kind"),
                    "sharp": "SHARP" in extra,
                    "address": None,
                    "line": number,
                }
            )
        else:
            match = _SOCK_DEV_RE.match(token)
            if not match:
                raise ParseError("damaged NET/Socket device %r" % token, line=number, kind=KIND)
            devices.append(
                {
                    "host": host,
                    "transport": "Socket",
                    "index": int(match.group("index")),
                    "name": match.group("name"),
                    "port": None,
                    "kind": "Socket",
                    "sharp": False,
                    "address": match.group("addr"),
                    "line": number,
                }
            )
    return devices


def _is_continuation(line: str) -> bool:
    """A line that may continue a multi-line WARN (not an NCCL line, comment or table row)."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#") or is_elision(stripped):
        return False
    if match_nccl_line(stripped) or stripped[0].isdigit():
        return False
    if re.search(r"Test (?:NCCL |CUDA )?failure|NCCL version|^-{5,}|\bERROR\b", stripped):
        return False
    return True


def join_warnings(lines: list[PreparedLine]) -> dict[int, tuple[str, str | None, list[int]]]:
    """Map the line number of each WARN line to ``(joined text, host, continuation line numbers)``."""
    result: dict[int, tuple[str, str | None, list[int]]] = {}
    index = 0
    while index < len(lines):
        number, line = lines[index][0], lines[index][1]
        match = match_nccl_line(line)
        if match and match.group("level") == "WARN":
            parts = [line.strip()]
            used: list[int] = []
            follow = index + 1
            while follow < len(lines) and len(used) < 4 and _is_continuation(lines[follow][1]):
                parts.append(lines[follow][1].strip())
                used.append(lines[follow][0])
                follow += 1
            text = re.sub(r"\s+", " ", " ".join(parts)).strip()
            result[number] = (text, match.group("host"), used)
            index = follow
            continue
        index += 1
    return result


def _new_result() -> dict[str, Any]:
    return {
        "nccl_version": None,
        "nccl_version_full": None,
        "cuda_driver_version": None,
        "hosts": [],
        "nccl_lines": 0,
        "nranks": None,
        "nnodes": None,
        "using_network": None,
        "net_plugin": None,
        "using_networks": [],
        "net_plugin_library": None,
        "external_net_plugin": None,
        "net_plugins_initialized": [],
        "net_plugin_failures": [],
        "ofi_provider": None,
        "net_devices": [],
        "relaxed_ordering": None,
        "oob_interfaces": [],
        "bootstrap_interfaces": [],
        "ib_disabled_or_absent": [],
        "hca_evidence": [],
        "fallback_to_socket": False,
        "via": {},
        "transports": {},
        "net_vias": [],
        "networks_by_host": {},
        "channels": {"ring": None, "coll": None, "collnet": None, "nvls": None, "p2p": None},
        "gdrdma": None,
        "dmabuf": None,
        "nvls_available": None,
        "nvls_disabled_by_env": False,
        "collnet_enabled_by_env": None,
        "mnnvl": None,
        "warnings": [],
        "elided": False,
    }


class _State:
    """Facts collected while reading, turned into the result at the end."""

    def __init__(self) -> None:
        self.result = _new_result()
        self.assigned: str | None = None
        self.using: str | None = None
        self.gdr_enabled = False
        self.gdr_disabled = False
        self.device_keys: set[tuple[str | None, str, int, str]] = set()
        self.socket_names: list[str] = []
        self.net_via_index: dict[tuple[str, str], int] = {}


def _max_int(current: int | None, value: str) -> int:
    number = int(value)
    return number if current is None else max(current, number)


def _read_message(state: _State, number: int, host: str | None, msg: str) -> None:
    """Fold one NCCL INFO/TRACE/WARN message into ``state``."""
    res = state.result
    ver, full = version_of(msg)
    if ver and res["nccl_version"] is None:
        res["nccl_version"], res["nccl_version_full"] = ver, full
    match = re.search(r"cudaDriverVersion (\d+)", msg)
    if match and res["cuda_driver_version"] is None:
        res["cuda_driver_version"] = int(match.group(1))
    for match in re.finditer(r"\bn[Rr]anks (\d+)", msg):
        res["nranks"] = _max_int(res["nranks"], match.group(1))
    match = re.search(r"\bnNodes (\d+)", msg)
    if match:
        res["nnodes"] = _max_int(res["nnodes"], match.group(1))
    match = re.search(r"\bMNNVL ([01])\s*$", msg)
    if match:
        res["mnnvl"] = bool(res["mnnvl"]) or match.group(1) == "1"
    match = re.match(r"Assigned NET plugin (.+?) to comm", msg)
    if match:
        state.assigned = match.group(1).strip()
        _add_unique(res["using_networks"], state.assigned)
        _add_unique(res["networks_by_host"].setdefault(host or "", []), _network_class(state.assigned))
    match = re.match(r"Using network (.+?)\s*$", msg)
    if match:
        state.using = match.group(1)
        _add_unique(res["using_networks"], state.using)
        _add_unique(res["networks_by_host"].setdefault(host or "", []), _network_class(state.using))
    match = re.match(r"Initialized NET plugin (.+?)\s*$", msg)
    if match:
        _add_unique(res["net_plugins_initialized"], match.group(1))
        if match.group(1) not in ("IB", "Socket"):
            res["external_net_plugin"] = match.group(1)
    match = re.match(r"Plugin Path\s*:\s*(\S+)", msg)
    if match:
        res["net_plugin_library"] = match.group(1)
    match = re.match(r"P2P plugin (\S+)", msg)
    if match:
        res["external_net_plugin"] = match.group(1)
    if re.match(r"Failed to initialize NET plugin|plugin/net\.cc:\d+ -> \d+|NET/OFI .*(?:Invalid|[Ff]ailed)", msg):
        res["net_plugin_failures"].append({"line": number, "text": msg.strip()})
    match = re.match(r"NET/OFI Selected Provider is (\S+)", msg)
    if match:
        res["ofi_provider"] = match.group(1)
    match = re.match(r"Bootstrap\s*:\s*Using (\S+?):", msg)
    if match:
        _add_unique(res["bootstrap_interfaces"], match.group(1))
    _read_net(state, number, host, msg)
    _read_transports(state, number, msg, host)


def _read_net(state: _State, number: int, host: str | None, msg: str) -> None:
    res = state.result
    for pattern in _IB_OFF_PATTERNS:
        if pattern.search(msg):
            res["ib_disabled_or_absent"].append({"line": number, "text": msg.strip()})
            break
    match = re.search(r"Unable to open device (\S+)", msg)
    if match:
        _add_unique(res["hca_evidence"], "RDMA device %s present but could not be opened" % match.group(1))
    match = re.match(r"NCCL_IB_HCA set (?:by environment )?to (\S+)", msg)
    if match:
        _add_unique(res["hca_evidence"], "NCCL_IB_HCA set to %s" % match.group(1))
    match = _NET_USING_RE.match(msg.strip())
    if match:
        transport = match.group("transport")
        rest = match.group("rest")
        oob = re.search(r";\s*OOB\s+([^\s:]+)", rest)
        if oob:
            _add_unique(res["oob_interfaces"], oob.group(1))
        if transport == "IB" and re.search(r"\[RO\]", rest):
            res["relaxed_ordering"] = True
        for device in _parse_device_list(transport, rest, number, host):
            key = (host, device["transport"], device["index"], device["name"])
            if key in state.device_keys:
                continue
            state.device_keys.add(key)
            res["net_devices"].append(device)
            if transport == "IB":
                _add_unique(res["hca_evidence"], "NET/IB lists %s (%s)" % (device["name"], device["kind"]))
            else:
                _add_unique(state.socket_names, device["name"])
    if re.search(r"GPU Direct RDMA Enabled", msg):
        state.gdr_enabled = True
    if re.search(r"GPU Direct RDMA Disabled", msg):
        state.gdr_disabled = True
    if "DMA-BUF is available" in msg:
        res["dmabuf"] = True
    if re.search(r"NVLS multicast support is available", msg):
        res["nvls_available"] = True
    elif re.search(r"NVLS multicast support is not available", msg) and res["nvls_available"] is None:
        res["nvls_available"] = False
    if re.search(r"NCCL_NVLS_ENABLE set by environment to 0\b", msg):
        res["nvls_disabled_by_env"] = True
    match = re.search(r"NCCL_COLLNET_ENABLE set by environment to (\d+)", msg)
    if match:
        res["collnet_enabled_by_env"] = match.group(1) != "0"


def _note_net_via(state: _State, number: int, host: str | None, via: str) -> None:
    """One ``net_vias`` entry per (host, via); later lines add to its count."""
    res = state.result
    key = (host or "", via)
    if key in state.net_via_index:
        res["net_vias"][state.net_via_index[key]]["count"] += 1
        return
    parts = via.split("/")
    dev = re.match(r"\d+", parts[2]) if len(parts) > 2 else None
    network = _network_class(parts[1])
    state.net_via_index[key] = len(res["net_vias"])
    res["net_vias"].append({"host": host, "via": via, "network": network, "dev": int(dev.group(0)) if dev else None,
                            "gdrdma": "GDRDMA" in parts[3:], "count": 1, "line": number})
    _add_unique(res["networks_by_host"].setdefault(host or "", []), network)


def _read_transports(state: _State, number: int, msg: str, host: str | None = None) -> None:
    res = state.result
    match = _VIA_RE.search(msg)
    if match and re.match(r"(?:Channel|Ring) \d+", msg):
        via = match.group("via")
        if via.startswith("NET/") and not _NET_VIA_RE.match(via):
            raise ParseError("damaged NET transport %r" % via, line=number, kind=KIND)
        if via.startswith("P2P/") and not _P2P_VIA_RE.match(via):
            raise ParseError("damaged P2P transport %r" % via, line=number, kind=KIND)
        res["via"][via] = res["via"].get(via, 0) + 1
        if via.startswith("NET/"):
            _note_net_via(state, number, host, via)
        cls = _transport_class(via)
        res["transports"][cls] = res["transports"].get(cls, 0) + 1
    for count, name in _CHANNELS_RE.findall(msg):
        res["channels"][name] = _max_int(res["channels"][name], count)
    match = _RING_CHANNEL_RE.match(msg.strip())
    if match:
        res["channels"]["ring"] = _max_int(res["channels"]["ring"], match.group(1))


def _finish(state: _State, raw_lines: list[PreparedLine]) -> dict[str, Any]:
    res = state.result
    res["net_plugin"] = state.assigned or state.using
    if res["net_plugin"] is None and res["net_plugins_initialized"]:
        res["net_plugin"] = res["net_plugins_initialized"][-1]
    res["using_network"] = _network_class(res["net_plugin"])
    net_vias = [via for via in res["via"] if via.startswith("NET/")]
    if res["using_network"] is None and net_vias:
        res["using_network"] = _network_class(net_vias[0].split("/")[1])
    _rdma_evidence(state, raw_lines)
    if net_vias:
        res["gdrdma"] = any("GDRDMA" in via for via in net_vias)
    elif state.gdr_enabled:
        res["gdrdma"] = True
    elif state.gdr_disabled:
        res["gdrdma"] = False
    uses_socket = res["using_network"] == "Socket" or (
        any(via.startswith("NET/Socket") for via in net_vias) and not any(via.startswith("NET/IB") for via in net_vias)
    )
    res["fallback_to_socket"] = bool(uses_socket and res["hca_evidence"])
    return res


def _rdma_evidence(state: _State, raw_lines: list[PreparedLine]) -> None:
    """Evidence of RDMA hardware outside NCCL's own lines (libibverbs, rdma-core) and IPoIB socket interfaces."""
    res = state.result
    for number, line, _kind, _rank in raw_lines:
        match = re.search(r"couldn'?t load driver '(libmlx\d?[^']*)'", line)
        if match:
            _add_unique(res["hca_evidence"], "RDMA driver %s present but not loadable" % match.group(1))
            res["ib_disabled_or_absent"].append({"line": number, "text": line.strip()})
        match = re.search(r"dlvsym failed on (mlx5dv_\w+)", line)
        if match:
            _add_unique(res["hca_evidence"], "libmlx5 (rdma-core) present but lacks %s" % match.group(1))
    res["ib_disabled_or_absent"].sort(key=lambda item: item["line"])
    for name in state.socket_names:
        if _IPOIB_RE.match(name):
            _add_unique(res["hca_evidence"], "NET/Socket uses IPoIB interface %s" % name)


def collect_nccl_debug(lines: list[PreparedLine]) -> dict[str, Any] | None:
    """Read prepared lines (see :func:`prepare_lines`); None when no NCCL line is present."""
    state = _State()
    res = state.result
    warnings = join_warnings(lines)
    seen_nccl = False
    for number, line, _kind, _rank in lines:
        if is_elision(line):
            res["elided"] = True
            continue
        ver, full = version_of(line)
        if ver:
            seen_nccl = True
            if res["nccl_version"] is None:
                res["nccl_version"], res["nccl_version_full"] = ver, full
            continue
        match = match_nccl_line(line)
        if not match:
            continue
        seen_nccl = True
        res["nccl_lines"] += 1
        host = match.group("host")
        _add_unique(res["hosts"], host)
        if match.group("level") == "WARN" and number in warnings:
            text, _host, _used = warnings[number]
            res["warnings"].append({"line": number, "text": text, "host": host})
            msg = text[text.index("NCCL WARN") + len("NCCL WARN"):].strip()
        else:
            msg = match.group("msg")
        _read_message(state, number, host, msg)
    if not seen_nccl:
        return None
    return _finish(state, lines)


def parse_nccl_debug(text: str) -> dict[str, Any]:
    """Parse NCCL_DEBUG=INFO/TRACE lines; see the module docstring for the keys."""
    lines = prepare_lines(text)
    result = collect_nccl_debug(lines)
    if result is None:
        raise ParseError("no NCCL INFO/WARN/TRACE line found", kind=KIND)
    return result

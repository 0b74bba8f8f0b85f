# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the network and GPU-bandwidth benchmarks run, where, and with which argv (pure).

Nothing here runs a command: the task files under ``playbooks/benchmark_tasks/`` call these
functions through the filters of ``plugins/filter/bench_network.py`` and hand each argv list,
unchanged, to ``gpufleet.acceptance.bench_run``.
Every argv is a list of strings; nothing a node printed is ever formatted into a shell.

iperf3
  *alone*: a directed ring over the hosts in the order given (``ansible_play_hosts``), ``h0 -> ... -> h0``:
  every host receives from its predecessor and sends to its successor, so with three hosts or
  more each host is measured with TWO different partners and the checks can tell a slow host
  (slow with both partners) from a slow partner or link (pair_search.infer, checks/
  bench_network.py). The ring's runs are split into rounds in which no host is in two runs
  (even n: two rounds; odd n: three; two hosts: one round per direction); the runs of a round
  run at the same time. Each host carries one flow at a time, so "alone" means no other flow
  shares the host's link; pairs of a round may share an uplink (that is what *concurrent*
  measures on purpose).
  *concurrent*: for every two racks (inventory label ``gpufleet_claim.rack``, else
  ``gpufleet_rack``) the i-th host of one rack is paired with the i-th host of the other, and
  all those cross-rack pairs run at once (one round per direction), ``group`` = ``"A<->B"``: the
  uplinks between the racks carry every pair's traffic together, so concurrent / alone exposes
  an oversold uplink.
  A run is recorded under the host that ran the client (``record_host``): the client's JSON is
  the measurement, and a client that could not run (missing binary) is that host's problem. The
  record's ``hosts`` is ``[client, server]``; which of the two is slow is the checks' inference
  over all runs, not where the record lives. A server that fails is recorded under the server
  host by ``bench_record`` (playbooks/benchmark_tasks/iperf3_round.yml).

perftest
  the same directed ring (and rounds) over the hosts that have compute-rail HCAs (Active RDMA
  ports of ``gpufleet_nic``, restricted like NCCL by ``NCCL_IB_HCA``); per run one
  client/server pair per rail, the i-th rail HCA of the client host to the i-th of the server
  host, each on its own TCP port (``-p``). The rails of a run are measured one after the other.
  GPUDirect: ``--use_cuda <gpu>`` is added on a side whose perftest build has CUDA (its
  ``--help`` mentions ``--use_cuda``), with the GPU nearest to the HCA (``nvidia-smi topo -m``
  facts), else GPU (rail index mod GPU count).

nvbandwidth
  ``nvbandwidth -t <testcase> ...`` on each node.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence, TypedDict

from gpufleet.plan.nccl_match import parse_spec

IPERF3_PORT = 5201
# Parallel TCP streams per iperf3 client: one TCP stream rarely fills a 100G+ link (one core,
# one congestion window); 8 streams is the usual starting point for 100G (ESnet fasterdata
# "100G tuning": use -P with several streams), and the option is ordinary (gpufleet_iperf3_streams).
IPERF3_STREAMS = 8
IPERF3_SECONDS = 60
# Intervals omitted at the start (TCP slow start, the burst a token bucket lets through).
IPERF3_OMIT = 3
# iperf3 runs each stream in a thread of its own from 3.16 on (ESnet iperf3 3.16 release notes: "multi-threaded");
# before, every -P stream shares one thread, one core, and a 100G+ link is not filled. Older versions get
# N one-stream client processes against N servers on N ports instead, summed by the check.
IPERF3_THREADED_VERSION = (3, 16)
_IPERF3_VERSION_RE = re.compile(r"\biperf\s+(\d+)\.(\d+)")

PERFTEST_PORT = 18515
PERFTEST_BW_SIZE = 8388608  # docs/baselines.md 4: ib_write_bw -s 8388608 --report_gbits
PERFTEST_LAT_SIZE = 8  # docs/baselines.md 4 (OCI): ib_write_lat -F -x 3 -s 8 -n 10000
PERFTEST_LAT_ITERS = 10000

NVBANDWIDTH_TESTCASES = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_write_ce")

_IPV4_MAPPED = re.compile(r"^(0000:){5}ffff:", re.IGNORECASE)


class PlanError(ValueError):
    """The inputs cannot give a plan (e.g. concurrent mode without two racks)."""


# --- racks ------------------------------------------------------------------------------------


def rack_of(hostvars: dict[str, Any] | None) -> str | None:
    """The rack/leaf label of one host: ``gpufleet_claim.rack``, else ``gpufleet_rack``, else None."""
    hostvars = hostvars or {}
    claim = hostvars.get("gpufleet_claim") or {}
    label = claim.get("rack") if isinstance(claim, dict) else None
    if label in (None, ""):
        label = hostvars.get("gpufleet_rack")
    return None if label in (None, "") else str(label)


def group_by_rack(hosts: Iterable[str], hostvars: dict[str, Any] | None) -> dict[str, list[str]]:
    """``{rack: [host, ...]}`` in inventory order; hosts without a label are left out."""
    racks: dict[str, list[str]] = {}
    for host in hosts:
        label = rack_of((hostvars or {}).get(host))
        if label is not None:
            racks.setdefault(label, []).append(host)
    return racks


# --- iperf3 pairs -----------------------------------------------------------------------------


def ring_rounds(hosts: Iterable[Any]) -> list[list[tuple[Any, Any]]]:
    """``[[(client, server), ...], ...]``: the directed ring ``h(i) -> h(i+1)`` in rounds sharing no host.

    Even n: edges from even i in round 0, odd i in round 1. Odd n >= 3: the same for the first
    n - 1 edges, the closing edge ``h(n-1) -> h0`` in round 2. Two hosts: ``h0 -> h1``, then
    ``h1 -> h0``. Fewer than two hosts: no rounds.
    """
    names = list(dict.fromkeys(hosts))
    count = len(names)
    if count < 2:
        return []
    edges = [(names[i], names[(i + 1) % count]) for i in range(count)]
    rounds: list[list[tuple[Any, Any]]] = [[] for _round in range(3 if count % 2 else 2)]
    for i, edge in enumerate(edges):
        rounds[2 if count % 2 and i == count - 1 else i % 2].append(edge)
    return rounds


def split_rounds(rounds: Iterable[Sequence[Any]], max_runs: Any = None) -> list[list[Any]]:
    """Each round cut into rounds of at most ``max_runs`` runs (None or < 1: unchanged).

    Every run of a round needs a worker of its own (``ansible_forks``: a server and its client
    must run at the same time), so the playbooks pass ``forks // 2``.
    """
    if not max_runs or int(max_runs) < 1:
        return [list(item) for item in rounds]
    size = int(max_runs)
    out: list[list[Any]] = []
    for item in rounds:
        out.extend(list(item[i:i + size]) for i in range(0, len(item), size))
    return out


class Iperf3Run(TypedDict):
    """One planned iperf3 run: who measures whom, in which round (runs of one round at the same time) and port."""

    client: Any
    server: Any
    record_host: Any  # the host whose results the run is recorded under: the client
    hosts: list[Any]
    mode: str  # "alone" or "concurrent"
    round: int
    group: str | None  # the rack pair of a concurrent run
    port: int


class PerftestRail(TypedDict):
    """One rail of a planned perftest run: the HCA of each side, the GPU of each side's --use_cuda, both argvs."""

    index: int
    client_hca: Any
    server_hca: Any
    label: str
    port: Any
    client_cuda: int | None
    server_cuda: int | None
    client_argv: list[str]
    server_argv: list[str]


def _entry(client: Any, server: Any, mode: str, round_no: int, index: int, group: str | None,
           port_base: int) -> Iperf3Run:
    return {"client": client, "server": server, "record_host": client, "hosts": [client, server], "mode": mode,
            "round": round_no, "group": group, "port": port_base + index}


def iperf3_alone(hosts: Iterable[Any], port_base: int = IPERF3_PORT, max_runs: Any = None) -> list[Iperf3Run]:
    """Runs of the *alone* mode: the directed ring of :func:`ring_rounds` (see the module docstring).

    Returns ``[{client, server, record_host, hosts, mode, round, group, port}]``; entries with
    the same ``round`` run at the same time; ``port`` is unique within a round; a round has at
    most ``max_runs`` runs (:func:`split_rounds`).
    """
    runs = []
    for round_no, edges in enumerate(split_rounds(ring_rounds(hosts), max_runs)):
        for index, (client, server) in enumerate(edges):
            runs.append(_entry(client, server, "alone", round_no, index, None, port_base))
    return runs


def iperf3_concurrent(hosts: Iterable[str], hostvars: dict[str, Any] | None,
                      port_base: int = IPERF3_PORT) -> list[Iperf3Run]:
    """Runs of the *concurrent* mode: all cross-rack pairs of two racks at once, per direction.

    Raises PlanError when fewer than two racks are labelled (nothing crosses an uplink).
    """
    racks = group_by_rack(hosts, hostvars)
    if len(racks) < 2:
        raise PlanError("concurrent iperf3 needs hosts labelled with at least two racks (gpufleet_claim.rack or "
                        "gpufleet_rack); found %s" % (sorted(racks) or "none"))
    names = list(racks)
    runs = []
    round_no = 0
    for i, rack_a in enumerate(names):
        for rack_b in names[i + 1:]:
            pairs = list(zip(racks[rack_a], racks[rack_b]))
            group = "%s<->%s" % (rack_a, rack_b)
            for forward in (True, False):
                for index, (host_a, host_b) in enumerate(pairs):
                    client, server = (host_a, host_b) if forward else (host_b, host_a)
                    runs.append(_entry(client, server, "concurrent", round_no, index, group, port_base))
                round_no += 1
    return runs


def iperf3_server_argv(port: Any, iperf3: str = "iperf3") -> list[str]:
    """A one-shot server: ``iperf3 -s -p PORT -1`` (exits after one test)."""
    return [iperf3, "-s", "-p", str(int(port)), "-1"]


def iperf3_client_argv(peer: Any, port: Any, streams: Any = IPERF3_STREAMS, seconds: Any = IPERF3_SECONDS,
                       omit: Any = IPERF3_OMIT, iperf3: str = "iperf3") -> list[str]:
    """``iperf3 -c <peer> -P <streams> -t <secs> -O <omit> --json -p <port>``."""
    streams, seconds, omit, port = int(streams), int(seconds), int(omit), int(port)
    if not 1 <= streams <= 128:
        raise PlanError("iperf3 streams must be 1..128 (iperf3 -P limit), got %d" % streams)
    if seconds < 1 or omit < 0:
        raise PlanError("iperf3 needs seconds >= 1 and omit >= 0")
    address = str(peer)
    if not address or address.startswith("-"):
        raise PlanError("iperf3 peer address %r is not an address" % address)
    return [iperf3, "-c", address, "-P", str(streams), "-t", str(seconds), "-O", str(omit), "--json", "-p", str(port)]


def iperf3_version(text: Any) -> tuple[int, int] | None:
    """``(3, 9)`` from ``iperf3 --version`` output (``iperf 3.9 (cJSON 1.7.13)``); None when it says no version."""
    match = _IPERF3_VERSION_RE.search(str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def iperf3_parallel(client_version: Any, server_version: Any, streams: Any) -> str:
    """``processes`` when an end runs iperf3 older than 3.16 and several streams are asked, else ``streams``
    (``-P N``).

    A version that is not known (no ``iperf3 --version`` answer: iperf3 is missing there, and the run
    will say so) leaves the plan as it was, ``-P N``.
    """
    if int(streams) <= 1:
        return "streams"
    known = [tuple(version) for version in (client_version, server_version) if version is not None]
    return "processes" if any(version < IPERF3_THREADED_VERSION for version in known) else "streams"


def iperf3_commands(run: dict[str, Any], streams: Any = IPERF3_STREAMS, seconds: Any = IPERF3_SECONDS,
                    omit: Any = IPERF3_OMIT, iperf3: str = "iperf3", versions: dict[str, Any] | None = None,
                    round_size: Any = 1) -> dict[str, Any]:
    """The server and client commands of one run of the plan, by the iperf3 versions of its two hosts.

    ``versions`` is ``{host: (major, minor) | None}`` (:func:`iperf3_version` of each host's
    ``iperf3 --version``). Returns ``{parallel, processes, ports, server_argv, client_argv,
    server_args, client_args}``: ``parallel`` ``streams`` -> one server and one ``-P streams``
    client (``server_argv``/``client_argv``); ``processes`` -> ``streams`` servers and ``streams``
    one-stream clients on the ports ``port + k * round_size`` (unique within the round, whose runs
    use ``port`` + 0..round_size-1), ``server_args``/``client_args`` the argument lists after the
    program, one per process, started together on each host and summed by the check.
    """
    versions = versions or {}
    parallel = iperf3_parallel(versions.get(run["client"]), versions.get(run["server"]), streams)
    if parallel == "streams":
        server = iperf3_server_argv(run["port"], iperf3=iperf3)
        client = iperf3_client_argv(run["address"], run["port"], streams, seconds, omit, iperf3=iperf3)
        return {"parallel": parallel, "processes": 1, "ports": [int(run["port"])], "server_argv": server,
                "client_argv": client, "server_args": [server[1:]], "client_args": [client[1:]]}
    ports = [int(run["port"]) + k * max(int(round_size), 1) for k in range(int(streams))]
    servers = [iperf3_server_argv(port, iperf3=iperf3) for port in ports]
    clients = [iperf3_client_argv(run["address"], port, 1, seconds, omit, iperf3=iperf3) for port in ports]
    return {"parallel": parallel, "processes": len(ports), "ports": ports, "server_argv": servers[0],
            "client_argv": clients[0], "server_args": [argv[1:] for argv in servers],
            "client_args": [argv[1:] for argv in clients]}


# --- perftest ---------------------------------------------------------------------------------


def perftest_has_cuda(help_text: Any) -> bool:
    """True when perftest was built with CUDA: its ``--help`` mentions ``--use_cuda``."""
    return "--use_cuda" in str(help_text or "")


def _active_ports(nic: dict[str, Any] | None) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    for dev in (nic or {}).get("rdma") or []:
        for port in dev.get("ports") or []:
            if port.get("state") == "Active":
                out.append((dev.get("device"), port))
    return out


def roce_gid_index(port: dict[str, Any] | None) -> int | None:
    """GID index for ``-x``: a RoCE v2 GID mapping an IPv4 address, else any RoCE v2 GID; None for IB."""
    facts = port or {}
    if facts.get("link_layer") != "Ethernet":
        return None
    gids = [gid for gid in facts.get("gids") or [] if "v2" in str(gid.get("type") or "").lower()]
    for gid in gids:
        if _IPV4_MAPPED.match(str(gid.get("gid") or "")):
            return int(gid["index"])
    return int(gids[0]["index"]) if gids else None


def rail_hcas(nic: dict[str, Any] | None, nccl_ib_hca: Any = None) -> list[dict[str, Any]]:
    """The compute-rail HCAs of a node: ``[{hca, port, link_layer, gid_index}]``, sorted by name.

    The Active RDMA ports of ``gpufleet_nic``, restricted by ``NCCL_IB_HCA`` (prefix match,
    ``=`` exact, ``^`` excludes, ``:port``) when provisioning chose one.
    """
    exclude, exact, entries = parse_spec(nccl_ib_hca) if nccl_ib_hca else (False, False, [])
    out = []
    for device, port in _active_ports(nic):
        number = port.get("port")
        hit = any((device == name if exact else str(device).startswith(name)) and wanted in (-1, number)
                  for name, wanted in entries)
        if entries and hit == exclude:
            continue
        out.append({"hca": device, "port": number, "link_layer": port.get("link_layer"),
                    "gid_index": roce_gid_index(port)})
    return sorted(out, key=lambda item: (str(item["hca"]), item["port"] or 0))


def perftest_pairs(client_hcas: list[dict[str, Any]], server_hcas: list[dict[str, Any]],
                   port_base: int = PERFTEST_PORT) -> list[dict[str, Any]]:
    """Rail i of the client with rail i of the server: ``[{client_hca, server_hca, ..., port}]``."""
    return [{"client": c, "server": s, "port": port_base + i}
            for i, (c, s) in enumerate(zip(client_hcas, server_hcas))]


def cuda_device_for(hca: Any, index: int, topology: dict[str, Any] | None = None, gpu_count: Any = None) -> int:
    """The GPU for ``--use_cuda`` with rail ``hca`` (the ``index``-th rail).

    The GPU whose nearest NICs (``gpufleet_topology.nearest_nic``, from ``nvidia-smi topo -m``)
    include the HCA, lowest GPU number first; else ``index`` mod ``gpu_count``; else 0.
    """
    nearest = (topology or {}).get("nearest_nic") or {}

    def number(name: Any) -> int | None:
        digits = re.sub(r"\D", "", str(name))
        return int(digits) if digits else None

    for gpu in sorted(nearest, key=lambda name: (number(name) is None, number(name) or 0)):
        found = number(gpu)
        if hca in ((nearest[gpu] or {}).get("devices") or []) and found is not None:
            return found
    if gpu_count:
        return int(index) % int(gpu_count)
    return 0


def perftest_plan(hosts: Iterable[Any], info: dict[str, Any] | None, tool: str = "ib_write_bw",
                  port_base: int = PERFTEST_PORT, path: str | None = None, size: Any = None,
                  iterations: Any = PERFTEST_LAT_ITERS, max_runs: Any = None) -> dict[str, Any]:
    """The perftest runs over ``hosts``: ``{runs, skipped}``.

    ``info`` maps each host to ``{rails, address, cuda, topology, gpu_count}``: its rail HCAs
    (:func:`rail_hcas`), the address clients reach its server at, whether its perftest build has
    CUDA and GPUDirect is wanted (``cuda``: ``ib_write_bw`` only), and its GPU facts for
    :func:`cuda_device_for`. Hosts without a rail are ``skipped`` with the reason; the others form
    the directed ring of :func:`ring_rounds`. Each run: ``{round, client, server, record_host
    (the client), hosts, rails: [{index, client_hca, server_hca, label, port, client_cuda,
    server_cuda, client_argv, server_argv}]}``; a run of hosts with different rail counts pairs
    the first ``min`` rails. A round has at most ``max_runs`` runs (:func:`split_rounds`).
    """
    if tool not in ("ib_write_bw", "ib_write_lat"):
        raise PlanError("perftest tool must be ib_write_bw or ib_write_lat, got %r" % (tool,))
    names = list(dict.fromkeys(str(host) for host in hosts))
    info = info or {}
    skipped = {}
    eligible = []
    for host in names:
        if (info.get(host) or {}).get("rails"):
            eligible.append(host)
        else:
            skipped[host] = ("no active RDMA rail in this host's NIC facts (gpufleet_nic.rdma, restricted by "
                             "NCCL_IB_HCA)")
    if len(eligible) == 1:
        skipped[eligible[0]] = "no other host with an active RDMA rail to pair with"
        eligible = []
    binary = path or tool
    runs = []
    for round_no, edges in enumerate(split_rounds(ring_rounds(eligible), max_runs)):
        for client, server in edges:
            mine, theirs = info[client], info[server]
            rails = [_perftest_rail(tool, binary, index, pair, mine, theirs, server, size, iterations)
                     for index, pair in enumerate(perftest_pairs(mine["rails"], theirs["rails"], port_base))]
            runs.append({"round": round_no, "client": client, "server": server, "record_host": client,
                         "hosts": [client, server], "rails": rails})
    return {"runs": runs, "skipped": skipped}


def _perftest_rail(tool: str, binary: str, index: int, pair: dict[str, Any], mine: dict[str, Any],
                   theirs: dict[str, Any], server: str, size: Any, iterations: Any) -> PerftestRail:
    """One rail of a perftest run: the client's and the server's argv (with the GPU for ``--use_cuda`` where the
    side's build has CUDA; ``ib_write_lat`` never)."""
    c_hca, s_hca = pair["client"], pair["server"]
    c_cuda = cuda_device_for(c_hca["hca"], index, mine.get("topology"), mine.get("gpu_count")) \
        if mine.get("cuda") else None
    s_cuda = cuda_device_for(s_hca["hca"], index, theirs.get("topology"), theirs.get("gpu_count")) \
        if theirs.get("cuda") else None
    if tool == "ib_write_bw":
        extra = {} if size is None else {"size": size}
        server_argv = ib_write_bw_argv(s_hca, pair["port"], s_hca.get("gid_index"), s_cuda, tool=binary, **extra)
        client_argv = ib_write_bw_argv(c_hca, pair["port"], c_hca.get("gid_index"), c_cuda,
                                       server_address=theirs.get("address") or server, tool=binary, **extra)
    else:
        extra = {"iterations": iterations} if size is None else {"iterations": iterations, "size": size}
        server_argv = ib_write_lat_argv(s_hca, pair["port"], s_hca.get("gid_index"), tool=binary, **extra)
        client_argv = ib_write_lat_argv(c_hca, pair["port"], c_hca.get("gid_index"),
                                        server_address=theirs.get("address") or server, tool=binary, **extra)
        c_cuda = s_cuda = None
    return {"index": index, "client_hca": c_hca["hca"], "server_hca": s_hca["hca"],
            "label": "%s->%s" % (hca_label(c_hca), hca_label(s_hca)), "port": pair["port"], "client_cuda": c_cuda,
            "server_cuda": s_cuda, "client_argv": client_argv, "server_argv": server_argv}


def hca_label(hca: dict[str, Any]) -> str:
    """``mlx5_0`` for port 1, ``mlx5_0:2`` for another port."""
    if hca.get("port") in (None, 1):
        return str(hca["hca"])
    return "%s:%s" % (hca["hca"], hca["port"])


def _perftest_common(tool: str, hca: Any, port: Any, gid_index: Any, size: Any, extra: list[str]) -> list[str]:
    argv = [tool, "-d", str(hca["hca"]) if isinstance(hca, dict) else str(hca)]
    if isinstance(hca, dict) and hca.get("port") not in (None, 1):
        argv += ["-i", str(int(hca["port"]))]
    if gid_index is not None:
        argv += ["-x", str(int(gid_index))]
    argv += list(extra)
    argv += ["-s", str(int(size)), "-F", "-p", str(int(port))]
    return argv


def ib_write_bw_argv(hca: Any, port: Any, gid_index: Any = None, cuda_device: Any = None, server_address: Any = None,
                     size: Any = PERFTEST_BW_SIZE, tool: str = "ib_write_bw") -> list[str]:
    """``ib_write_bw -d <hca> [-x <gid>] --report_gbits -s 8388608 -F -p <port> [--use_cuda N] [<server>]``.

    Without ``server_address`` this is the server side. ``cuda_device`` (int) only when the
    perftest build has CUDA (:func:`perftest_has_cuda`).
    """
    argv = _perftest_common(tool, hca, port, gid_index, size, ["--report_gbits"])
    if cuda_device is not None:
        argv += ["--use_cuda", str(int(cuda_device))]
    if server_address is not None:
        argv.append(_address(server_address))
    return argv


def ib_write_lat_argv(hca: Any, port: Any, gid_index: Any = None, server_address: Any = None,
                      size: Any = PERFTEST_LAT_SIZE, iterations: Any = PERFTEST_LAT_ITERS,
                      tool: str = "ib_write_lat") -> list[str]:
    """``ib_write_lat -d <hca> [-x <gid>] -n 10000 -s 8 -F -p <port> [<server>]``."""
    argv = _perftest_common(tool, hca, port, gid_index, size, ["-n", str(int(iterations))])
    if server_address is not None:
        argv.append(_address(server_address))
    return argv


def _address(value: Any) -> str:
    address = str(value)
    if not address or address.startswith("-"):
        raise PlanError("server address %r is not an address" % address)
    return address


# --- nvbandwidth ------------------------------------------------------------------------------


def nvbandwidth_argv(testcases: Iterable[Any] = NVBANDWIDTH_TESTCASES, tool: str = "nvbandwidth") -> list[str]:
    """``nvbandwidth -t <testcase> [<testcase> ...]`` (nvbandwidth's ``-t`` takes several names)."""
    names = [str(name) for name in testcases]
    if not names or any(not re.fullmatch(r"[A-Za-z0-9_]+", name) for name in names):
        raise PlanError("nvbandwidth testcases must be names like host_to_device_memcpy_ce: %r" % (names,))
    return [tool, "-t"] + names

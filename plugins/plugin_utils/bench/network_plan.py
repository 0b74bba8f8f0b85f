# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the network and GPU-bandwidth benchmarks run, where, and with which argv (pure).

Nothing here runs a command: the task files under ``playbooks/benchmark_tasks/`` call these
functions through the filters of ``plugins/filter/bench_network.py`` and hand each argv list,
unchanged, to ``gpufleet.acceptance.bench_run``.
Every argv is a list of strings; nothing a node printed is ever formatted into a shell.

iperf3
  *alone*: disjoint pairs ``(h0, h1), (h2, h3), ...`` in inventory order (an odd last host is
  paired with the first host in rounds of its own); each pair runs in both directions, one
  direction per round, and the pairs of a round run at the same time (they share no host).
  *concurrent*: for every two racks (inventory label ``gpufleet_claim.rack``, else
  ``gpufleet_rack``) the i-th host of one rack is paired with the i-th host of the other, and
  all those cross-rack pairs run at once (one round per direction), ``group`` = ``"A<->B"``: the
  uplinks between the racks carry every pair's traffic together, so concurrent / alone exposes
  an oversold uplink.
  A run is recorded under its RECEIVING host (the iperf3 server): a limit on a host's ingress
  (a throttled switch port or bridge-side link) shows on that host's record; the record's
  ``hosts`` is ``[client, server]`` and the message names the direction.

perftest
  one client/server pair per compute-rail HCA pair: the i-th rail HCA of the client host to
  the i-th of the server host, each on its own TCP port (``-p``) so all rails can run at once.

nvbandwidth
  ``nvbandwidth -t <testcase> ...`` on each node.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.nccl_env import parse_spec

IPERF3_PORT = 5201
# Parallel TCP streams per iperf3 client: one TCP stream rarely fills a 100G+ link (one core,
# one congestion window); 8 streams is the usual starting point for 100G (ESnet fasterdata
# "100G tuning": use -P with several streams), and the option is ordinary (gpufleet_iperf3_streams).
IPERF3_STREAMS = 8
IPERF3_SECONDS = 60
# Intervals omitted at the start (TCP slow start, the burst a token bucket lets through).
IPERF3_OMIT = 3

PERFTEST_PORT = 18515
PERFTEST_BW_SIZE = 8388608  # BASELINES.md 4: ib_write_bw -s 8388608 --report_gbits
PERFTEST_LAT_SIZE = 8  # BASELINES.md 4 (OCI): ib_write_lat -F -x 3 -s 8 -n 10000
PERFTEST_LAT_ITERS = 10000

NVBANDWIDTH_TESTCASES = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_write_ce")

_IPV4_MAPPED = re.compile(r"^(0000:){5}ffff:", re.IGNORECASE)


class PlanError(ValueError):
    """The inputs cannot give a plan (e.g. concurrent mode without two racks)."""


# --- racks ------------------------------------------------------------------------------------


def rack_of(hostvars):
    """The rack/leaf label of one host: ``gpufleet_claim.rack``, else ``gpufleet_rack``, else None."""
    hostvars = hostvars or {}
    claim = hostvars.get("gpufleet_claim") or {}
    label = claim.get("rack") if isinstance(claim, dict) else None
    if label in (None, ""):
        label = hostvars.get("gpufleet_rack")
    return None if label in (None, "") else str(label)


def group_by_rack(hosts, hostvars):
    """``{rack: [host, ...]}`` in inventory order; hosts without a label are left out."""
    racks = {}
    for host in hosts:
        label = rack_of((hostvars or {}).get(host))
        if label is not None:
            racks.setdefault(label, []).append(host)
    return racks


# --- iperf3 pairs -----------------------------------------------------------------------------


def disjoint_pairs(hosts):
    """``[[(a, b), ...], ...]``: rounds of host pairs that share no host.

    First round: ``(h0, h1), (h2, h3), ...``; an odd last host gets a round of its own with
    ``h0`` (every host is measured at least once). Fewer than two hosts: no rounds.
    """
    hosts = list(dict.fromkeys(hosts))
    if len(hosts) < 2:
        return []
    rounds = [[(hosts[i], hosts[i + 1]) for i in range(0, len(hosts) - 1, 2)]]
    if len(hosts) % 2:
        rounds.append([(hosts[-1], hosts[0])])
    return rounds


def _entry(client, server, mode, round_no, index, group, port_base):
    return {"client": client, "server": server, "record_host": server, "hosts": [client, server], "mode": mode,
            "round": round_no, "group": group, "port": port_base + index}


def iperf3_alone(hosts, port_base=IPERF3_PORT):
    """Runs of the *alone* mode: each disjoint pair in both directions (see the module docstring).

    Returns ``[{client, server, record_host, hosts, mode, round, group, port}]``; entries with
    the same ``round`` run at the same time; ``port`` is unique within a round.
    """
    runs = []
    round_no = 0
    for pairs in disjoint_pairs(hosts):
        for forward in (True, False):
            for index, (first, second) in enumerate(pairs):
                client, server = (first, second) if forward else (second, first)
                runs.append(_entry(client, server, "alone", round_no, index, None, port_base))
            round_no += 1
    return runs


def iperf3_concurrent(hosts, hostvars, port_base=IPERF3_PORT):
    """Runs of the *concurrent* mode: all cross-rack pairs of two racks at once, per direction.

    Raises PlanError when fewer than two racks are labelled (nothing crosses an uplink).
    """
    racks = group_by_rack(hosts, hostvars)
    if len(racks) < 2:
        raise PlanError("concurrent iperf3 needs hosts labelled with at least two racks (gpufleet_claim.rack or gpufleet_rack); found %s"
                        % (sorted(racks) or "none"))
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


def rounds_of(runs):
    """``[[run, ...], ...]`` grouped by ``round`` in order."""
    out = {}
    for run in runs:
        out.setdefault(run["round"], []).append(run)
    return [out[key] for key in sorted(out)]


def iperf3_server_argv(port, iperf3="iperf3"):
    """A one-shot server: ``iperf3 -s -p PORT -1`` (exits after one test)."""
    return [iperf3, "-s", "-p", str(int(port)), "-1"]


def iperf3_client_argv(peer, port, streams=IPERF3_STREAMS, seconds=IPERF3_SECONDS, omit=IPERF3_OMIT, iperf3="iperf3"):
    """``iperf3 -c <peer> -P <streams> -t <secs> -O <omit> --json -p <port>``."""
    streams, seconds, omit, port = int(streams), int(seconds), int(omit), int(port)
    if not 1 <= streams <= 128:
        raise PlanError("iperf3 streams must be 1..128 (iperf3 -P limit), got %d" % streams)
    if seconds < 1 or omit < 0:
        raise PlanError("iperf3 needs seconds >= 1 and omit >= 0")
    peer = str(peer)
    if not peer or peer.startswith("-"):
        raise PlanError("iperf3 peer address %r is not an address" % peer)
    return [iperf3, "-c", peer, "-P", str(streams), "-t", str(seconds), "-O", str(omit), "--json", "-p", str(port)]


# --- perftest ---------------------------------------------------------------------------------


def perftest_has_cuda(help_text):
    """True when perftest was built with CUDA: its ``--help`` mentions ``--use_cuda``."""
    return "--use_cuda" in str(help_text or "")


def _active_ports(nic):
    out = []
    for dev in (nic or {}).get("rdma") or []:
        for port in dev.get("ports") or []:
            if port.get("state") == "Active":
                out.append((dev.get("device"), port))
    return out


def roce_gid_index(port):
    """GID index for ``-x``: a RoCE v2 GID mapping an IPv4 address, else any RoCE v2 GID; None for IB."""
    if (port or {}).get("link_layer") != "Ethernet":
        return None
    gids = [gid for gid in port.get("gids") or [] if "v2" in str(gid.get("type") or "").lower()]
    for gid in gids:
        if _IPV4_MAPPED.match(str(gid.get("gid") or "")):
            return int(gid["index"])
    return int(gids[0]["index"]) if gids else None


def rail_hcas(nic, nccl_ib_hca=None):
    """The compute-rail HCAs of a node: ``[{hca, port, link_layer, gid_index}]``, sorted by name.

    The Active RDMA ports of ``gpufleet_nic``, restricted by ``NCCL_IB_HCA`` (prefix match,
    ``=`` exact, ``^`` excludes, ``:port``) when provisioning chose one.
    """
    exclude, exact, entries = parse_spec(nccl_ib_hca) if nccl_ib_hca else (False, False, [])
    out = []
    for device, port in _active_ports(nic):
        number = port.get("port")
        hit = any((device == name if exact else str(device).startswith(name)) and wanted in (-1, number) for name, wanted in entries)
        if entries and hit == exclude:
            continue
        out.append({"hca": device, "port": number, "link_layer": port.get("link_layer"), "gid_index": roce_gid_index(port)})
    return sorted(out, key=lambda item: (str(item["hca"]), item["port"] or 0))


def perftest_pairs(client_hcas, server_hcas, port_base=PERFTEST_PORT):
    """Rail i of the client with rail i of the server: ``[{client_hca, server_hca, ..., port}]``."""
    return [{"client": c, "server": s, "port": port_base + i} for i, (c, s) in enumerate(zip(client_hcas, server_hcas))]


def _perftest_common(tool, hca, port, gid_index, size, extra):
    argv = [tool, "-d", str(hca["hca"]) if isinstance(hca, dict) else str(hca)]
    if isinstance(hca, dict) and hca.get("port") not in (None, 1):
        argv += ["-i", str(int(hca["port"]))]
    if gid_index is not None:
        argv += ["-x", str(int(gid_index))]
    argv += list(extra)
    argv += ["-s", str(int(size)), "-F", "-p", str(int(port))]
    return argv


def ib_write_bw_argv(hca, port, gid_index=None, cuda_device=None, server_address=None, size=PERFTEST_BW_SIZE, tool="ib_write_bw"):
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


def ib_write_lat_argv(hca, port, gid_index=None, server_address=None, size=PERFTEST_LAT_SIZE, iterations=PERFTEST_LAT_ITERS, tool="ib_write_lat"):
    """``ib_write_lat -d <hca> [-x <gid>] -n 10000 -s 8 -F -p <port> [<server>]``."""
    argv = _perftest_common(tool, hca, port, gid_index, size, ["-n", str(int(iterations))])
    if server_address is not None:
        argv.append(_address(server_address))
    return argv


def _address(value):
    value = str(value)
    if not value or value.startswith("-"):
        raise PlanError("server address %r is not an address" % value)
    return value


# --- nvbandwidth ------------------------------------------------------------------------------


def nvbandwidth_argv(testcases=NVBANDWIDTH_TESTCASES, tool="nvbandwidth"):
    """``nvbandwidth -t <testcase> [<testcase> ...]`` (nvbandwidth's ``-t`` takes several names)."""
    testcases = [str(name) for name in testcases]
    if not testcases or any(not re.fullmatch(r"[A-Za-z0-9_]+", name) for name in testcases):
        raise PlanError("nvbandwidth testcases must be names like host_to_device_memcpy_ce: %r" % (testcases,))
    return [tool, "-t"] + testcases

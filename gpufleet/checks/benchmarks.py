# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark checks (pure): all-reduce in a node and across nodes, the fleet-relative rule, the pair search.

Reads the benchmark records of each host (``NodeContext.settings["benchmarks"]``, the host
record's ``benchmarks`` list, docs/results-schema.md). A record's kind is :func:`benchmark_kind`
(its ``kind`` field; records of older runs without one are read by their name there, and only there).

- ``benchmarks.allreduce_single``: out-of-place busbw at the profile's
  ``thresholds.allreduce_single_node.message_size`` (else the largest size of the sweep, and the
  message says so) against its floor / warn band. Repeats vote: the median figure is judged and
  the spread (min-max) is reported; ``gpufleet_benchmark_vote: best`` judges the best instead. A run
  with one rank (``1 rank: busbw is 0 by definition``) or with a rank count other than the node's GPU
  count (``4 of 8 GPUs in the run``; GPU facts, else claim, else profile) fails by name and is never
  judged as a figure; a 1-GPU node is not judged. A busbw above what the node's GPU links carry (checks/plausible.py
  ``busbw_ceiling``: the profile's NVLink both ways, else 1,800 GB/s) fails as ``implausible: ...`` and is never
  judged, nor compared with the fleet (``allreduce_relative``); so does such a figure of a multi-node run.
- ``benchmarks.allreduce_wrong``: ``#wrong`` (and ``Out of bounds values``) must be 0, any kind. A run that hung or
  failed (:func:`run_problem`) compared nothing past where it stopped: never a ``#wrong 0`` pass (skip, naming why).
- ``benchmarks.allreduce_algo``: ``NCCL_ALGO`` and NVLS as recorded (warns when the profile's floor
  assumes NVLS and the NCCL log says NVLS was unavailable or disabled).
- ``benchmarks.allreduce_multi`` (fleet): a multi-node run that fell back to sockets on a node with
  active RDMA ports FAILS with that reason whatever its number; else busbw at the largest size
  against the floor that fits the run (:func:`multi_node_floor`): the node count of the profile's published
  ``thresholds.allreduce_multi_node`` (its ``nodes``: 2 as shipped; null: every count); another count (or fewer
  NICs than the profile's), the NIC-bound floor from the per-node NIC aggregate and link layer (docs/baselines.md
  3b), its source saying why the profile's was not used; neither known: not judged, saying which floor is for
  which count. Judged on every host of the run, each host against the floor of its own profile: the figure is the
  run's, the floor is what each host's profile (and its ``gpufleet_profile_overrides``) expects of it, so one
  host's stricter (or laxer) floor never judges another; where the hosts' floors differ, every result of the run
  names them. A node left out of it for having no Active compute rail fails naming that.
- ``benchmarks.allreduce_relative`` (fleet): single-node busbw against the cohort median, each node held to its own
  profile's ``fleet.max_below_median`` (checks/fleet.py ``cohort_relative``). A node's figure is at its profile's
  ``thresholds.allreduce_single_node.message_size`` (else the largest size of its sweep, and the message says so,
  as ``allreduce_single`` does); figures at different sizes are never compared: each size is its own comparison,
  and the message names the sizes of the cohort.
- ``benchmarks.pair_search`` (fleet): the per-pair figures of the bad-node search
  (``allreduce_pair`` records; a pair's runs in different rounds are its measurements, repeats in
  one round vote by median) go through ``bench/pair_search.infer`` with the mode, confirmation and
  seed of the search (the records' ``group`` label, :func:`search_label`); a convicted node fails
  naming the pairs that convicted it, a convicted link fails on both ends naming the link, an
  unresolved slow pair (or one still awaiting its confirmation run) warns. Besides the relative rule
  an absolute floor (the NIC-bound floor of the searched nodes) makes a pair slow; a conviction says
  which rule made it, and a node none of whose pairs reaches the absolute floor fails (a fleet slow
  everywhere). Every message ends with the search's summary: bad nodes and links named, rounds used, mode.
  A pair run with fewer ranks than the two nodes' GPUs (``2 of 16 GPUs in the pair run``: ``-np 2`` loads one
  rail of eight) fails on both nodes by name and is never a figure of the search.
- ``benchmarks.nccl_network`` (fleet): the NCCL_DEBUG=INFO evidence of the multi-node and pair runs
  (:func:`check_nccl_network`, docs/baselines.md 9): NET/IB without GDRDMA where GPUDirect is required fails, fewer
  distinct HCAs than compute rails fails, ranks on different networks warn, MNNVL 0 on a multi-node NVLink profile fails.
- A run that never started on the node (``outcome`` in :data:`NOT_RUN_OUTCOMES`: the tool is not installed, the
  preflight skipped it) is not verified: SKIP with the reason, so a level that requires it leaves the node
  INCOMPLETE, as a verdict's meaning says ("not run, tool missing"), never REJECT.
- A run that started and did not finish (``outcome`` hang, crash, launcher_error, failed) fails its check with
  the outcome and reason (:func:`outcome_problem`; a hang whose reason says it hung is not called a hang twice):
  it is never read as a figure; nor is a table a row of which another rank's output cut (parsed ``damaged``), even
  after exit 0 (:func:`figure_problem`).
"""

from __future__ import annotations

import re

from gpufleet.plan.pair_search import DEFAULT_TOLERANCE, best, infer, measurements, pair_key
from gpufleet.checks.registry import fleet_check, node_check
from gpufleet.checks.fixes import launcher_fix
from gpufleet.checks.fleet import cohort_relative, cohorts, median
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, result
from gpufleet.checks.network import num, rdma_rails
from gpufleet.checks.plausible import busbw_ceiling, implausible
from gpufleet.checks.profiles import profile_value

VOTE_SETTING = "gpufleet_benchmark_vote"
TOLERANCE_SETTING = "gpufleet_pair_search_tolerance"
ALLREDUCE_KINDS = ("allreduce_single", "allreduce_multi", "allreduce_pair")
NCCL_ENV_SETTING = "gpufleet_nccl_env"

# Ring all-reduce across nodes is bounded by what each node's compute NICs carry: busbw reaches about this
# fraction of the per-node NIC aggregate (docs/baselines.md 3b, "NIC-bound floors"). InfiniBand: DeepOps'
# 2 and 4 DGX A100 over 8x HDR, 188.53 and 191.05 of 200 GB/s (94.27 %); Ethernet (RoCE): DeepOps' 2 DGX-1
# over 2x 100 GbE RoCE, 22.9 of 25 GB/s.
NIC_EFFICIENCY = {"InfiniBand": 0.94, "Ethernet": 0.916}
NIC_EFFICIENCY_SOURCE = {
    "InfiniBand": "0.94 x the per-node NIC aggregate (DeepOps 8x HDR DGX A100: 188.53-191.05 of 200 GB/s)",
    "Ethernet": "0.916 x the per-node NIC aggregate (DeepOps 2x 100GbE RoCE DGX-1: 22.9 of 25 GB/s)",
}
# The floor sits 10 % under that expectation, nccl-tests' own margin (NCCL_TESTS_MIN_BW fails below 0.9 x the
# figure, docs/baselines.md 1): healthy published runs clear it (365.8 GB/s on 4 nodes of 8x NDR, nccl-tests
# #309, against 338.4), one rail of eight missing (12.5 %) does not.
NIC_FLOOR_FRACTION = 0.9


def records_of(node):
    """The node's benchmark records (a list of dicts)."""
    records = node.settings.get("benchmarks") or []
    return [record for record in records if isinstance(record, dict)]


def _parsed(record):
    parsed = record.get("parsed")
    return parsed if isinstance(parsed, dict) else {}


def hosts_of(record):
    """Inventory names of the hosts of a run: the record's ``hosts``, else ``parsed.hosts``."""
    hosts = record.get("hosts")
    if isinstance(hosts, list) and hosts:
        return [str(host) for host in hosts]
    return [str(host) for host in _parsed(record).get("hosts") or []]


def benchmark_kind(record):
    """The kind of a benchmark record (one of results/store.py ``BENCHMARK_KINDS``): its ``kind`` field.

    Every reader asks here. The writers set ``kind``; a record written without one (by an older run)
    is read by its name, as such records always were: ``all_reduce_perf*`` is ``allreduce_single``
    with at most one host (:func:`hosts_of`), ``allreduce_pair`` with two, ``allreduce_multi`` with
    more; ``iperf3*`` is ``iperf3_concurrent`` when the environment's ``GPUFLEET_IPERF3_MODE`` or the
    name says concurrent, else ``iperf3``; any other name's first word is its kind (None without a name).
    """
    if record.get("kind"):
        return record["kind"]
    name = str(record.get("name") or "")
    if name.startswith("all_reduce_perf"):
        count = len(set(hosts_of(record)))
        if count <= 1:
            return "allreduce_single"
        return "allreduce_pair" if count == 2 else "allreduce_multi"
    first = name.split()[0] if name.split() else ""
    if first.startswith("iperf3"):
        mode = (record.get("environment") or {}).get("GPUFLEET_IPERF3_MODE")
        concurrent = mode == "concurrent" or "concurrent" in name
        return "iperf3_concurrent" if concurrent else "iperf3"
    return first or None


# Outcomes of a run that never started on the node: nothing was measured, so its item is not verified (INCOMPLETE
# where the level requires it), never failed. "unreachable": the node did not answer the benchmark's task.
NOT_RUN_OUTCOMES = ("skipped", "missing_binary", "unreachable")
# A reason that says the run hung ("hung: the table header was printed and no result row followed", nccl-tests' parser)
HUNG_WORD = re.compile(r"\bhung\b", re.IGNORECASE)


def not_run(record):
    """``"not verified: <name> was not run: <outcome> (<reason>)"`` for a run that never started, else None."""
    outcome = record.get("outcome")
    if outcome not in NOT_RUN_OUTCOMES:
        return None
    reason = " ".join(str(record.get("reason") or "").split())[:300]
    return "not verified: %s was not run: %s%s" % (record.get("name") or "the benchmark", outcome.replace("_", " "),
                                                   " (%s)" % reason if reason else "")


def outcome_problem(record):
    """A message when the run did not produce a figure to judge (outcome not ok), else None.

    ``<name> did not finish: hang (<reason>)``, ``<name> failed: <outcome> (<reason>)``; a hang whose reason already
    says it hung (the parser's ``hung: the table header was printed ...``, then the runner's timeout) is
    ``<name> did not finish: <reason>``, the outcome not said twice.
    """
    outcome = record.get("outcome")
    if outcome in (None, "ok"):
        return None
    name = record.get("name") or "benchmark"
    reason = " ".join(str(record.get("reason") or "").split())[:200]
    if outcome == "hang" and HUNG_WORD.search(reason):
        return "%s did not finish: %s" % (name, reason)
    fix = launcher_fix(reason) if outcome == "launcher_error" else None
    return "%s %s: %s%s%s" % (name, "did not finish" if outcome == "hang" else "failed", outcome,
                              " (%s)" % reason if reason else "", "; fix: %s" % fix if fix else "")


def run_problem(record):
    """:func:`outcome_problem`, or why the output says the run failed although it exited 0 (``failed``, its ``cause``).

    For the checks that read a run's NCCL_DEBUG evidence (algorithm, NVLS, transports): what a run
    that failed printed about its set-up is no evidence of what a finished run would use.
    """
    problem = outcome_problem(record)
    if problem:
        return problem
    parsed = _parsed(record)
    if not parsed:
        why = "no output the parser could read"
    elif parsed.get("failed"):
        why = parsed.get("cause") or "the output says it failed"
    else:
        return None
    return "%s failed: %s" % (record.get("name") or "benchmark", " ".join(str(why).split())[:200])


def figure_problem(record: dict) -> str | None:
    """:func:`outcome_problem`, or why a run's table is no figure although the run exited 0: a result row cut by
    another process's output (parsers/nccl_tests.py ``damaged``): the rows before it are a part of the sweep."""
    problem = outcome_problem(record)
    if problem or not _parsed(record).get("damaged"):
        return problem
    return run_problem(record)


def not_validated(record):
    """Why a run's ``#wrong`` says nothing (it ran with ``-c 0``), else None."""
    command = [str(part) for part in record.get("command") or []]
    asked = any(part in ("-c", "--check") and following == "0" for part, following in zip(command, command[1:]))
    asked = asked or any(part in ("-c0", "--check=0") for part in command)
    parsed = _parsed(record)
    if asked or parsed.get("validated") is False:
        said = "validation: 0" if (parsed.get("params") or {}).get("validation") == 0 else "#wrong N/A"
        return "%s ran with -c 0 (%s): its results were not checked, #wrong says nothing" % (
            record.get("name") or "all_reduce_perf", said if parsed.get("validated") is False else "command line")
    return None


def busbw_at(parsed, size):
    """``(busbw, size judged)``: out-of-place busbw of the last row at ``size``, else at the largest size."""
    rows = [row for row in parsed.get("rows") or [] if isinstance(row.get("out_of_place"), dict)]
    if size is not None:
        at = [row for row in rows if row.get("size_bytes") == size and row["out_of_place"].get("busbw_gbs") is not None]
        if at:
            return at[-1]["out_of_place"]["busbw_gbs"], size
    if parsed.get("busbw_at_largest_size_gbs") is not None:
        return parsed["busbw_at_largest_size_gbs"], parsed.get("largest_size_bytes")
    return None, None


def size_words(size):
    if size is None:
        return "unknown size"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "%d %s" % (size // factor, unit)
    return "%d B" % size


def largest_size(sizes) -> int | None:
    """The largest known size of ``sizes`` (the size a node's figures are judged at), None when none is known."""
    known = [size for size in sizes if size is not None]
    return max(known) if known else None


def size_reason(judged_size, wanted) -> str | None:
    """Why busbw is judged at ``judged_size`` where that is not the profile's ``message_size`` ``wanted``, else None."""
    if wanted is None:
        return "the profile names no message size: judged at the largest size"
    if judged_size != wanted:
        return "the profile's size %s is absent from the sweep: judged at its largest size" % size_words(wanted)
    return None


def vote(values, how="median"):
    """``(judged figure, min, max)`` of repeats; ``how`` is ``median`` or ``best``."""
    if not values:
        return None, None, None
    judged = max(values) if how == "best" else median(values)
    return judged, min(values), max(values)


def _repeat_words(values, how):
    if len(values) < 2:
        return ""
    return " (%s of %d repeats, spread %s-%s)" % ("best" if how == "best" else "median", len(values), num(min(values)), num(max(values)))


def node_gpu_count(node) -> tuple:
    """``(GPU count, where from)``: the node's GPU facts, else the claim's ``gpu_count``, else the profile's."""
    gpu = node.group("gpu") or {}
    if isinstance(gpu.get("gpu_count"), int):
        return gpu["gpu_count"], "GPU facts"
    claim = node.claim or {}
    if isinstance(claim.get("gpu_count"), int):
        return claim["gpu_count"], "claim"
    expected, _source = profile_value(node.profile, "expect.gpu_count")
    return (expected, "profile %s" % node.profile.get("name")) if isinstance(expected, int) else (None, None)


def ranks_problem(node, record):
    """Why a single-node run does not measure the whole node (one rank; fewer or more ranks than GPUs), else None."""
    parsed = _parsed(record)
    if parsed.get("single_rank"):
        return "1 rank: busbw is 0 by definition (nccl-tests scales algbw by 2(n-1)/n); run one rank per GPU"
    ranks = parsed.get("ranks")
    gpus, where = node_gpu_count(node)
    if isinstance(ranks, int) and isinstance(gpus, int) and ranks != gpus:
        return "%d of %d GPUs in the run (%d GPUs by the %s): the figure is not the node's" % (ranks, gpus, gpus, where)
    return None


def pair_ranks_problem(by_name, record) -> str | None:
    """Why a pair run does not load every GPU of both nodes (``2 of 16 GPUs in the pair run``), else None.

    One rank per GPU of both nodes puts traffic on every rail; fewer ranks (``-np 2`` on two 8-GPU nodes
    exercises one NIC of eight) measure a part of the pair, so the figure is not the pair's. Unknown when
    the run's rank count or either node's GPU count is.
    """
    hosts = list(dict.fromkeys(hosts_of(record)))
    ranks = _parsed(record).get("ranks")
    if len(hosts) != 2 or not isinstance(ranks, int) or any(host not in by_name for host in hosts):
        return None
    counts = [node_gpu_count(by_name[host]) for host in hosts]
    if any(not isinstance(gpus, int) for gpus, _where in counts):
        return None
    total = sum(gpus for gpus, _where in counts)
    if ranks == total:
        return None
    where = " + ".join("%d on %s (%s)" % (gpus, host, source) for host, (gpus, source) in zip(hosts, counts))
    if ranks < total:
        return "%d of %d GPUs in the pair run (%s): one rank per GPU of both nodes puts traffic on every rail; " \
            "the figure is not the pair's" % (ranks, total, where)
    return "%d ranks for %d GPUs in the pair run (%s): the GPUs are oversubscribed; the figure is not the pair's" % (
        ranks, total, where)


def _launch_words(record):
    """How a single-node run was launched, from its ``group`` label (``single_node launch=mpirun gpus=8``)."""
    fields = dict(word.split("=", 1) for word in str(record.get("group") or "").split() if "=" in word)
    return {"mpirun": "one rank per GPU through mpirun", "srun": "one task per GPU through srun",
            "threads": "one process, -g per GPU"}.get(fields.get("launch"), "")


def nic_aggregate(node) -> dict | None:
    """The node's compute NICs as ``{count, gbps, link_layer, gbs, source}`` (``gbs`` the aggregate in GB/s), or None.

    From the claim's compute ``ib``/``roce`` NICs, else the profile's ``expect.compute_rail``, else the node's
    Active RDMA ports (the most common link layer and rate among them). Several claimed compute entries add up.
    """
    rails = [rail for rail in rdma_rails(node) or [] if rail.get("role") == "compute" and rail.get("count") and rail.get("gbps")]
    if rails:
        gbps = sum(rail["count"] * float(rail["gbps"]) for rail in rails)
        count = sum(rail["count"] for rail in rails)
        link_layer = rails[0]["link_layer"]
        source = "claim" if rails[0]["source"] == "claim" else rails[0]["source"]
        return {"count": count, "gbps": gbps / count, "link_layer": link_layer, "gbs": gbps / 8.0, "source": source}
    nic = node.group("nic")
    if not nic:
        return None
    keys = [(port.get("link_layer"), port.get("rate_gbps")) for dev in nic.get("rdma") or [] for port in dev.get("ports") or []
            if port.get("state") == "Active" and port.get("link_layer") in NIC_EFFICIENCY and port.get("rate_gbps")]
    if not keys:
        return None
    key = max(set(keys), key=lambda item: (keys.count(item), item[1] or 0))
    count = keys.count(key)
    return {"count": count, "gbps": float(key[1]), "link_layer": key[0], "gbs": count * float(key[1]) / 8.0,
            "source": "NIC facts (Active RDMA ports)"}


def nic_floor(aggregates) -> dict | None:
    """The NIC-bound floor of a run over nodes with these :func:`nic_aggregate` s (the smallest bounds the ring).

    ``{floor, expected, aggregate, source}`` (GB/s), None when no node's aggregate is known.
    """
    known = [agg for agg in aggregates if agg and agg.get("link_layer") in NIC_EFFICIENCY]
    if not known:
        return None
    low = min(known, key=lambda agg: agg["gbs"] * NIC_EFFICIENCY[agg["link_layer"]])
    expected = low["gbs"] * NIC_EFFICIENCY[low["link_layer"]]
    floor = round(NIC_FLOOR_FRACTION * expected, 1)
    source = ("docs/baselines.md 3b NIC-bound floors: %s; floor %s of it (nccl-tests' 0.9 margin, docs/baselines.md 1); "
              "aggregate %d x %s Gb/s %s = %s GB/s (%s)" % (
                  NIC_EFFICIENCY_SOURCE[low["link_layer"]], num(NIC_FLOOR_FRACTION), low["count"], num(low["gbps"]),
                  low["link_layer"], num(round(low["gbs"], 1)), low["source"]))
    return {"floor": floor, "expected": round(expected, 1), "aggregate": low["gbs"], "source": source}


def multi_node_floor(nodes, count) -> dict:
    """``{host: {floor, source, rule}}``: the floor of a multi-node all-reduce over ``nodes`` (``count`` nodes), each
    host's from its own profile (:func:`host_multi_node_floor`); ``floor`` None, with ``why``, where none applies.

    The NIC-bound floor (:func:`nic_floor`) is the run's: the node with the smallest NIC aggregate bounds the ring.
    """
    aggregates = [nic_aggregate(node) for node in nodes]
    bound = nic_floor(aggregates)
    smallest = min((agg["gbs"] for agg in aggregates if agg), default=None)
    return {node.name: host_multi_node_floor(node, count, bound, smallest) for node in nodes}


def host_multi_node_floor(node, count, bound, smallest) -> dict:
    """One host's floor in a run of ``count`` nodes whose NIC-bound floor is ``bound`` and smallest NIC aggregate
    ``smallest`` (GB/s): ``{floor, source, rule}``, or ``{floor: None, why}``.

    The profile's ``thresholds.allreduce_multi_node`` when its ``nodes`` is the run's count (a published two-node,
    16-rank figure) and the run's NIC aggregate is at least the profile's ``expect.compute_rail`` one (or unknown);
    with ``nodes`` null, for every count. Else the NIC-bound floor: busbw across more nodes is bounded by each node's
    NICs, so the two-node figure (440 GB/s on 8x NDR, above the 376 the NICs allow) never applies there. Never
    silently: the source, or the ``why`` of a host not judged, says why the profile's floor was not used.
    """
    threshold = profile_value(node.profile, "thresholds.allreduce_multi_node")[0]
    nic_rule = "the NIC-bound floor for %d nodes" % count
    if threshold is None:
        if bound is None:
            return {"floor": None, "why": "the profile sets no thresholds.allreduce_multi_node and the nodes' NIC "
                    "aggregate is unknown"}
        return {"floor": bound["floor"], "source": bound["source"], "rule": nic_rule}
    if threshold.get("nodes") is None:
        return {"floor": threshold["floor"], "source": threshold.get("source"),
                "rule": "the profile's multi-node floor (every node count)"}
    if threshold["nodes"] != count:
        not_used = "thresholds.allreduce_multi_node (%s GB/s) is for %d nodes" % (
            num(threshold["floor"]), threshold["nodes"])
        if bound is None:
            why = "%s, this run has %d, and no NIC-bound floor is known (no compute rail speeds: no claimed compute " \
                "NICs, expect.compute_rail or Active RDMA port rates)" % (not_used, count)
            return {"floor": None, "why": why}
        return {"floor": bound["floor"], "source": "%s; %s (its nodes), not %d" % (bound["source"], not_used, count),
                "rule": nic_rule}
    rail = profile_value(node.profile, "expect.compute_rail")[0]
    profile_gbs = rail["count"] * float(rail["rate"]) / 8.0 if rail else None
    if smallest is None or profile_gbs is None or smallest >= profile_gbs:
        return {"floor": threshold["floor"], "source": threshold.get("source"),
                "rule": "the %s-node published floor" % ("two" if count == 2 else count)}
    fewer = "the profile's %s-node floor %s GB/s assumes %s GB/s of NICs per node" % (
        "two" if count == 2 else count, num(threshold["floor"]), num(profile_gbs))
    if bound is None:
        return {"floor": None, "why": "%s, a node of this run has %s GB/s, and no NIC-bound floor is known (its link "
                "layer is neither InfiniBand nor Ethernet)" % (fewer, num(round(smallest, 1)))}
    return {"floor": bound["floor"], "source": "%s; %s" % (bound["source"], fewer), "rule": nic_rule}


def floors_words(floors) -> str | None:
    """When the hosts of one run have different floors (their profiles differ): which hosts have which, and that
    each host is judged against its own; None when they agree."""
    hosts_by_floor = {}
    for host, entry in floors.items():
        hosts_by_floor.setdefault(entry["floor"], []).append(host)
    if len(hosts_by_floor) < 2:
        return None

    def hosts_words(hosts):
        return ", ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else "")

    parts = ["%s: %s" % ("no floor" if floor is None else "%s GB/s" % num(floor), hosts_words(hosts))
             for floor, hosts in sorted(hosts_by_floor.items(), key=lambda item: -1 if item[0] is None else item[0])]
    return "the run's hosts have different floors (%s): each host is judged against its own" % "; ".join(parts)


def left_out_of_rdma(node, others) -> str | None:
    """Why the node was left out of the RDMA runs (no Active compute rail while other nodes have one), else None."""
    env = node.settings.get(NCCL_ENV_SETTING) or {}
    ports = active_rdma_ports(node)
    if str(env.get("NCCL_IB_DISABLE")) != "1" and ports != []:
        return None
    with_rails = [other.name for other in others
                  if other is not node and str((other.settings.get(NCCL_ENV_SETTING) or {}).get("NCCL_IB_DISABLE")) == "0"]
    rails = [rail for rail in rdma_rails(node) or [] if rail.get("count")]
    if not with_rails and not rails:
        return None
    expected = "; %s expects %d" % (rails[0]["source"], sum(rail["count"] for rail in rails)) if rails else ""
    return "left out of the RDMA runs: no Active RDMA port on a compute rail (NCCL_IB_DISABLE=1 on this node only)%s" % expected


# --- single node ---------------------------------------------------------------------------------


def implausible_busbw(node, record, value, check_id="benchmarks.allreduce_single"):
    """A FAIL naming the node and the figure when a run's busbw is above what the node's GPU links carry
    (checks/plausible.py :func:`busbw_ceiling`): a damaged or forged output, never judged against a floor; else None."""
    ceiling, source = busbw_ceiling(node.profile)
    absurd = implausible("allreduce_busbw_gbs", value, "%s busbw of %s" % (node.name, record.get("name") or "the run"),
                         ceiling, source)
    if absurd is None:
        return None
    return result(check_id, FAIL, absurd, measured=value, expected=ceiling, threshold_source=source,
                  subject=record.get("name"))


@node_check("benchmarks.allreduce_single")
def check_allreduce_single(node):
    """Single-node all-reduce busbw at the profile's message size against its floor and warn band."""
    records = [record for record in records_of(node) if benchmark_kind(record) == "allreduce_single"]
    if not records:
        return [result("benchmarks.allreduce_single", SKIP, "not judged: no single-node all_reduce_perf run recorded")]
    out = [result("benchmarks.allreduce_single", SKIP if not_run(record) else FAIL, not_run(record) or problem,
                  subject=record.get("name"))
           for record in records for problem in [figure_problem(record)] if problem]
    threshold, threshold_source = profile_value(node.profile, "thresholds.allreduce_single_node")
    wanted = (threshold or {}).get("message_size")
    gpus, gpus_from = node_gpu_count(node)
    if gpus == 1 and not out:
        return [result("benchmarks.allreduce_single", SKIP, "not judged: a node with 1 GPU (%s) has no all-reduce within it "
                       "(busbw is 0 by definition)" % gpus_from)]
    # a run over fewer GPUs than the node has (or one rank, whose busbw is 0) fails by name and is never judged as the node's
    bad_ranks = {}
    for record in records:
        problem = None if figure_problem(record) else ranks_problem(node, record)
        if problem:
            bad_ranks.setdefault(problem, []).append(record)
    for problem, bad in bad_ranks.items():
        ranks = _parsed(bad[0]).get("ranks")
        out.append(result("benchmarks.allreduce_single", FAIL, "%s%s" % (problem, " (%d runs)" % len(bad) if len(bad) > 1 else ""),
                          measured=ranks, expected=gpus, threshold_source="the node's GPU count (%s)" % (gpus_from or "unknown"),
                          subject=bad[0].get("name")))
    counted = [record for records_of_problem in bad_ranks.values() for record in records_of_problem]
    figures, sizes, ranks_seen, launches = [], set(), set(), set()
    for record in records:
        if figure_problem(record) or any(record is bad for bad in counted):
            continue
        ranks_seen.add(_parsed(record).get("ranks"))
        launches.add(_launch_words(record))
        value, size = busbw_at(_parsed(record), wanted)
        absurd = implausible_busbw(node, record, value)
        if absurd:
            out.append(absurd)
        elif value is not None:
            figures.append(value)
            sizes.add(size)
    if not figures:
        if not out:
            said = next((problem for problem in map(run_problem, records) if problem), None)
            message = "no busbw in the single-node all_reduce_perf output (no result row)"
            out.append(result("benchmarks.allreduce_single", FAIL, message + (": " + said if said else "")))
        return out
    how = node.settings.get(VOTE_SETTING) or "median"
    judged, _low, _high = vote(figures, how)
    judged_size = largest_size(sizes)
    why = size_reason(judged_size, wanted)
    where = "at %s%s" % (size_words(judged_size), " (%s)" % why if why else "")
    spread = _repeat_words(figures, how)
    ranks = next(iter(ranks_seen)) if len(ranks_seen) == 1 else None
    launch = "; ".join(sorted(word for word in launches if word))
    if isinstance(ranks, int):
        where += " over %d of %s GPUs%s" % (ranks, num(gpus), " (%s)" % launch if launch else "") if gpus is not None else \
            " over %d ranks (the node's GPU count is unknown: not compared)" % ranks
    if threshold is None:
        out.append(result("benchmarks.allreduce_single", SKIP, "not judged: the profile sets no thresholds.allreduce_single_node; busbw %s GB/s %s%s" % (
            num(judged), where, spread), measured=judged))
        return out
    source = threshold.get("source") or threshold_source
    floor, warn_below = threshold.get("floor"), threshold.get("warn_below")
    if judged < floor:
        status, words = FAIL, "below the floor %s GB/s" % num(floor)
    elif warn_below is not None and judged < warn_below:
        status, words = WARN, "above the floor %s GB/s but below %s GB/s" % (num(floor), num(warn_below))
    else:
        status, words = PASS, "at or above the floor %s GB/s" % num(floor)
    out.append(result("benchmarks.allreduce_single", status, "single-node all-reduce busbw %s GB/s %s%s, %s" % (num(judged), where, spread, words),
                      measured=judged, expected=floor, threshold_source=source, subject=size_words(judged_size)))
    return out


@node_check("benchmarks.allreduce_wrong")
def check_allreduce_wrong(node):
    """``#wrong`` must be 0 (and ``Out of bounds values`` 0) in every all-reduce run recorded on the node."""
    records = [record for record in records_of(node) if benchmark_kind(record) in ALLREDUCE_KINDS and _parsed(record)]
    if not records:
        return [result("benchmarks.allreduce_wrong", SKIP, "not judged: no all_reduce_perf output recorded")]
    out = []
    unchecked = []
    unfinished = []
    for record in records:
        parsed = _parsed(record)
        unvalidated = not_validated(record)
        if unvalidated:
            # -c 0: nccl-tests prints N/A (older versions 0) in #wrong without comparing anything: not a pass
            unchecked.append(result("benchmarks.allreduce_wrong", SKIP, "not validated: " + unvalidated, measured="not validated",
                                    expected=0, threshold_source="nccl-tests: #wrong must be 0 (with -c 1)",
                                    subject=record.get("name")))
            continue
        wrong, bounds = parsed.get("wrong_total"), parsed.get("out_of_bounds")
        bad_rows = [row["size_bytes"] for row in parsed.get("rows") or []
                    if any(isinstance((row.get(half) or {}).get("wrong"), (int, float)) and (row.get(half) or {}).get("wrong") > 0
                           for half in ("out_of_place", "in_place"))]
        if (wrong or 0) > 0 or (bounds or 0) > 0 or parsed.get("out_of_bounds_status") == "FAILED":
            message = "%s: #wrong %s in %d row(s) (first at %s), Out of bounds values %s: the results are corrupt"
            out.append(result("benchmarks.allreduce_wrong", FAIL, message % (
                record.get("name"), num(wrong), len(bad_rows), size_words(bad_rows[0]) if bad_rows else "unknown size", num(bounds)),
                measured=wrong if wrong is not None else bounds, expected=0, threshold_source="nccl-tests: #wrong must be 0", subject=record.get("name")))
        elif run_problem(record):
            # a hung or failed run compared nothing past where it stopped: its #wrong 0 is no pass
            unfinished.append(result("benchmarks.allreduce_wrong", SKIP, "not judged: %s: its #wrong says nothing"
                                     % run_problem(record), subject=record.get("name")))
    checked = len(records) - len(unchecked) - len(unfinished)
    if not out and checked:
        out.append(result("benchmarks.allreduce_wrong", PASS, "#wrong 0 in %d validated all-reduce run(s)%s" % (
            checked, "; %d not validated (-c 0)" % len(unchecked) if unchecked else ""), measured=0, expected=0,
            threshold_source="nccl-tests: #wrong must be 0"))
    return out + unchecked + unfinished


@node_check("benchmarks.allreduce_algo")
def check_allreduce_algo(node):
    """NCCL_ALGO and NVLS as recorded with the single-node runs."""
    singles = [record for record in records_of(node) if benchmark_kind(record) == "allreduce_single"]
    records = [record for record in singles if not run_problem(record)]
    if not records:
        failed = [run_problem(record) for record in singles]
        said = " (%s)" % "; ".join(failed[:2]) if failed else ""
        return [result("benchmarks.allreduce_algo", SKIP, "not judged: no finished single-node all_reduce_perf run%s" % said)]
    threshold = profile_value(node.profile, "thresholds.allreduce_single_node")[0] or {}
    out = []
    for record in records:
        env = record.get("environment") or {}
        algo = record.get("algorithm") or env.get("NCCL_ALGO") or "not pinned (NCCL's choice)"
        debug = _parsed(record).get("debug") or {}
        channels = debug.get("channels") or {}
        nvls_off = debug.get("nvls_available") is False or debug.get("nvls_disabled_by_env") or str(env.get("NCCL_NVLS_ENABLE")) == "0"
        nvls = "off" if nvls_off else ("on (%s NVLS channels)" % channels["nvls"] if channels.get("nvls") else "not reported")
        message = "%s: NCCL_ALGO %s, NVLS %s" % (record.get("name"), algo, nvls)
        if threshold.get("nvls") and nvls_off:
            out.append(result("benchmarks.allreduce_algo", WARN, message + "; the profile's floor assumes NVLS", measured=nvls, expected="NVLS on",
                              threshold_source=threshold.get("source")))
        else:
            out.append(result("benchmarks.allreduce_algo", PASS, message, measured=algo))
    return out


# --- across nodes ----------------------------------------------------------------------------------


def _all_records(nodes, kind):
    """Each record of ``kind`` once (records may be stored on several hosts), with its hosts."""
    seen, out = set(), []
    for node in nodes:
        for record in records_of(node):
            if benchmark_kind(record) != kind:
                continue
            key = (record.get("name"), record.get("started"), tuple(hosts_of(record)), record.get("repeat"))
            if key in seen:
                continue
            seen.add(key)
            out.append(record)
    return out


def active_rdma_ports(node):
    """Active RDMA ports (``dev/port``) in the node's facts; None when no NIC facts."""
    nic = node.group("nic")
    if nic is None:
        return None
    return ["%s/%s" % (dev.get("device"), port.get("port")) for dev in nic.get("rdma") or [] for port in dev.get("ports") or []
            if port.get("state") == "Active"]


def fell_back(parsed):
    """True when the NCCL log shows the network transport was sockets only (no NET/IB)."""
    debug = parsed.get("debug") or {}
    transports = parsed.get("transports") or debug.get("transports") or {}
    if parsed.get("fallback_to_socket") or debug.get("fallback_to_socket"):
        return True
    names = set(transports)
    return "NET/Socket" in names and not any(name.startswith("NET/IB") for name in names)


@fleet_check("benchmarks.allreduce_multi")
def check_allreduce_multi(nodes):
    """Multi-node all-reduce: socket fallback on RDMA nodes fails; else busbw against the multi-node floor."""
    by_name = {node.name: node for node in nodes}
    out = {}
    runs = _all_records(nodes, "allreduce_multi")
    for record in runs:
        parsed = _parsed(record)
        hosts = [host for host in hosts_of(record) if host in by_name]
        if record.get("outcome") in NOT_RUN_OUTCOMES:
            # the preflight did not start it (one host in the play, a host of the launcher blocked, the tool missing):
            # nothing was measured, so the item is unverified (INCOMPLETE where required), not failed, like the pair search's
            reason = " ".join(str(record.get("reason") or "no reason recorded").split())[:300]
            message = "not judged: %s was not run: %s" % (record.get("name") or "the multi-node all-reduce", reason)
            for host in hosts:
                out.setdefault(host, []).append(result("benchmarks.allreduce_multi", SKIP, message,
                                                       subject=record.get("name")))
            continue
        problem = figure_problem(record)
        value = parsed.get("busbw_at_largest_size_gbs")
        # each host's floor, fitted to the run's node count and its nodes' NICs
        floors = multi_node_floor([by_name[host] for host in dict.fromkeys(hosts)], len(set(hosts_of(record))))
        differ = floors_words(floors)
        for host in hosts:
            node, threshold = by_name[host], floors[host]
            where = "%s over %s" % (record.get("name"), ", ".join(hosts_of(record)))
            absurd = implausible_busbw(node, record, value, "benchmarks.allreduce_multi")
            if fell_back(parsed):
                ports = active_rdma_ports(node)
                evidence = "; ".join((parsed.get("debug") or {}).get("hca_evidence") or [])[:300]
                message = "%s fell back to NET/Socket%s (busbw %s GB/s not judged)" % (where, ": " + evidence if evidence else "", num(value))
                if ports:
                    item = result("benchmarks.allreduce_multi", FAIL, message + "; the node has %d active RDMA port(s) (%s)" % (
                        len(ports), ", ".join(ports[:8])), measured="NET/Socket", expected="NET/IB", subject=record.get("name"))
                elif ports is None:
                    item = result("benchmarks.allreduce_multi", WARN, message + "; the node's RDMA ports are unknown (no NIC facts)",
                                  measured="NET/Socket", subject=record.get("name"))
                elif problem:
                    # sockets are this node's network, but a run that did not finish proves nothing about it
                    item = result("benchmarks.allreduce_multi", FAIL, "%s: %s" % (where, problem),
                                  subject=record.get("name"))
                else:
                    item = result("benchmarks.allreduce_multi", PASS, message + "; the node has no active RDMA port: sockets are its network",
                                  measured="NET/Socket", subject=record.get("name"))
            elif problem:
                item = result("benchmarks.allreduce_multi", FAIL, "%s: %s" % (where, problem), subject=record.get("name"))
            elif value is None:
                item = result("benchmarks.allreduce_multi", FAIL, "%s: no busbw in the output" % where, subject=record.get("name"))
            elif absurd:
                item = absurd
            elif threshold["floor"] is None:
                item = result("benchmarks.allreduce_multi", SKIP, "not judged: %s; %s busbw %s GB/s%s" % (
                    threshold["why"], where, num(value), "; " + differ if differ else ""), measured=value)
            else:
                low = value < threshold["floor"]
                message = "%s: busbw %s GB/s at %s, %s %s %s GB/s%s" % (
                    where, num(value), size_words(parsed.get("largest_size_bytes")), "below" if low else "at or above", threshold["rule"],
                    num(threshold["floor"]), "; " + differ if differ else "")
                item = result("benchmarks.allreduce_multi", FAIL if low else PASS, message, measured=value, expected=threshold["floor"],
                              threshold_source=threshold.get("source"), subject=record.get("name"))
            out.setdefault(host, []).append(item)
    started = [record for record in runs if record.get("outcome") != "skipped"]  # a run never started left no one out
    if started:
        for node in nodes:
            why = None if node.name in out else left_out_of_rdma(node, nodes)
            if why:
                run_hosts = sorted({host for record in started for host in hosts_of(record)})
                out[node.name] = [result("benchmarks.allreduce_multi", FAIL, "%s; not in the multi-node all-reduce over %s" % (
                    why, ", ".join(run_hosts)), measured="no RDMA rail",
                    expected="Active RDMA ports on the compute rails", subject=node.name)]
    return out


# --- the NCCL evidence of runs across nodes ------------------------------------------------------------

NCCL_NETWORK_CHECK = "benchmarks.nccl_network"
GDRDMA_SOURCE = ("docs/baselines.md 9: NCCL prints via NET/IB/<dev>/GDRDMA for a connection whose NIC reads and "
                 "writes GPU memory directly (GPUDirect RDMA); without GDRDMA the data is staged through host memory")
RAILS_SOURCE = ("docs/baselines.md 9: one HCA per compute rail carries the node's share of a ring across nodes "
                "(3b: the NIC-bound floor assumes every rail; one rail of eight missing falls below it)")
NETWORKS_SOURCE = "docs/baselines.md 9: every rank of one communicator should use the same network"
MNNVL_SOURCE = ("docs/baselines.md 9: on a multi-node NVLink system NCCL (>= 2.25.2) prints MNNVL 1 when its "
                "ranks reach each other over NVLink across nodes; MNNVL 0 sends that traffic over the network")


def gpudirect_required(node) -> tuple:
    """``(required, source)``: the profile's ``host.gpudirect_required`` when set, else True when the claim lists
    compute ``ib``/``roce`` NICs (as ``host.gpudirect`` reads a claim), else False."""
    required, source = profile_value(node.profile, "host.gpudirect_required")
    if required is not None:
        return bool(required), source
    claimed = [rail for rail in rdma_rails(node) or []
               if rail.get("source") == "claim" and rail.get("role") == "compute"]
    return (True, "claim (compute RDMA NICs)") if claimed else (False, None)


def compute_rail_count(node) -> tuple:
    """``(number of compute RDMA rails, source)`` from the claim, else the profile's ``expect.compute_rail``."""
    rails = [rail for rail in rdma_rails(node) or [] if rail.get("role") == "compute" and rail.get("count")]
    if not rails:
        return None, None
    return sum(rail["count"] for rail in rails), rails[0]["source"]


def multi_node_nvlink(node) -> tuple:
    """``(True, source)`` when the profile says NVLink spans nodes (``expect.fabric_clique_scope: nvlink_domain``)."""
    scope, source = profile_value(node.profile, "expect.fabric_clique_scope")
    return scope == "nvlink_domain", source


def log_host_of(inventory_name, log_hosts) -> str | None:
    """The host name NCCL printed for an inventory host: the same name or its short name.

    NCCL cuts the host name at the first dot."""
    short = str(inventory_name).split(".", 1)[0]
    for host in log_hosts:
        if host and (host == inventory_name or host == short or host.split(".", 1)[0] == short):
            return host
    return None


def _hca_names(debug, log_host, vias) -> list[str]:
    """Names of the HCAs the NET/IB connections use (the ``dev`` index into that host's ``NET/IB : Using`` list)."""
    names = {}
    for device in debug.get("net_devices") or []:
        if device.get("transport") == "IB" and (log_host is None or device.get("host") == log_host):
            names.setdefault(device.get("index"), device.get("name"))
    return sorted({names.get(via["dev"], "dev %s" % via["dev"]) for via in vias if via.get("dev") is not None})


def _via_words(vias, limit=4) -> str:
    """``NET/IB/0 x4 (line 195), ...`` of the first few channel transports."""
    words = ["%s x%d (line %d)" % (via["via"], via["count"], via["line"]) for via in vias[:limit]]
    more = " and %d more" % (len(vias) - limit) if len(vias) > limit else ""
    return ", ".join(words) + more


def _ranks_per_node(record, debug) -> int | None:
    nranks, nnodes = debug.get("nranks"), debug.get("nnodes") or len(set(hosts_of(record))) or None
    if isinstance(nranks, int) and isinstance(nnodes, int) and nnodes:
        return nranks // nnodes
    return None


def _judge_nccl_network(node, record, debug, log_host) -> list:
    """The NCCL-evidence results of one node in one run across nodes."""
    name = record.get("name") or "all_reduce_perf"
    where = "%s over %s" % (name, ", ".join(hosts_of(record)))
    mine = [via for via in debug.get("net_vias") or [] if log_host is None or via.get("host") == log_host]
    who = "" if log_host in (None, node.name) else " (NCCL's host name %s)" % log_host
    if log_host is None and len(set(via.get("host") for via in mine)) > 1:
        who = " (NCCL's host names do not name this node: every host's lines judged)"
    ib = [via for via in mine if via.get("network") == "IB"]
    items = []
    check = NCCL_NETWORK_CHECK
    # ranks that disagree on the network: some over IB, some over sockets (or a plugin)
    by_host = {host or "(no host prefix)": nets for host, nets in (debug.get("networks_by_host") or {}).items() if nets}
    networks = sorted({net for nets in by_host.values() for net in nets})
    if len(networks) > 1:
        per_host = "; ".join("%s: %s" % (host, ", ".join(nets)) for host, nets in by_host.items())
        items.append(result(check, WARN, "%s: ranks report different networks (%s): %s" % (
            where, ", ".join(networks), per_host),
            measured=networks, expected="one network", threshold_source=NETWORKS_SOURCE, subject=name))
    mnnvl, mnnvl_source = multi_node_nvlink(node)
    if mnnvl and debug.get("mnnvl") is False:
        items.append(result(check, FAIL, "%s: NCCL's log says MNNVL 0 on a multi-node NVLink system (%s): the "
                            "ranks do not reach each other over NVLink across nodes" % (where, mnnvl_source),
                            measured="MNNVL 0", expected="MNNVL 1", threshold_source=MNNVL_SOURCE, subject=name))
    elif mnnvl and debug.get("mnnvl") is None:
        items.append(result(check, SKIP, "MNNVL not judged: %s printed no MNNVL field (NCCL < 2.25 or no "
                            "NCCL_DEBUG=INFO comm lines)" % where, subject=name))
    if not ib:
        return items
    required, required_source = gpudirect_required(node)
    without = [via for via in ib if not via.get("gdrdma")]
    if required and without:
        items.append(result(check, FAIL, "%s%s: %d of %d NET/IB channel transport(s) without GDRDMA where GPUDirect "
                            "RDMA is required (%s): %s" % (
                                where, who, len(without), len(ib), required_source, _via_words(without)),
                            measured="NET/IB without GDRDMA", expected="via NET/IB/<dev>/GDRDMA",
                            threshold_source=GDRDMA_SOURCE, subject=name))
    used = _hca_names(debug, log_host, ib)
    rails, rails_source = compute_rail_count(node)
    per_node = _ranks_per_node(record, debug)
    if rails and used and len(used) < rails:
        if per_node is not None and per_node < rails:
            items.append(result(check, SKIP, "HCAs not judged: %s has %d rank(s) per node for %d rails (%s); it uses %s" % (
                where, per_node, rails, rails_source, ", ".join(used)), subject=name))
        else:
            items.append(result(check, FAIL, "%s%s: the NET/IB connections use %d distinct HCA(s) (%s) for %d compute "
                                "rails (%s): %s" % (
                                    where, who, len(used), ", ".join(used), rails, rails_source, _via_words(ib)),
                                measured=used, expected="%d HCAs" % rails, threshold_source=RAILS_SOURCE, subject=name))
    if not any(item["status"] in (FAIL, WARN) for item in items):
        gdr = "all with GDRDMA" if not without else "%d without GDRDMA (GPUDirect not required%s)" % (
            len(without), ": %s" % required_source if required_source else "")
        items.append(result(check, PASS, "%s%s: NET/IB over %d HCA(s) (%s)%s, %d channel transport(s) %s" % (
            where, who, len(used), ", ".join(used), " for %d rails" % rails if rails else "", len(ib), gdr),
            measured=used, expected="%d HCAs" % rails if rails else None,
            threshold_source=GDRDMA_SOURCE if required else RAILS_SOURCE, subject=name))
    return items


@fleet_check(NCCL_NETWORK_CHECK)
def check_nccl_network(nodes):
    """What NCCL_DEBUG=INFO says about the runs across nodes (multi-node and pair all-reduce) on each host.

    GPUDirect required (:func:`gpudirect_required`) and a NET/IB connection without GDRDMA fails; fewer distinct HCAs in
    the NET/IB connections than compute rails fails (naming them; a run with fewer ranks per node than rails is not
    judged); ranks naming different networks warn; on a multi-node NVLink system MNNVL 0 fails. A run that did not
    finish, or one without NCCL_DEBUG lines, gives no result (the benchmark checks judge it).
    """
    by_name = {node.name: node for node in nodes}
    out = {}
    for kind in ("allreduce_multi", "allreduce_pair"):
        for record in _all_records(nodes, kind):
            debug = _parsed(record).get("debug") or {}
            hosts = [host for host in dict.fromkeys(hosts_of(record)) if host in by_name]
            if len(set(hosts_of(record))) < 2 or not debug or run_problem(record):
                continue
            log_hosts = [via.get("host") for via in debug.get("net_vias") or []] + list(debug.get("hosts") or [])
            for host in hosts:
                log_host = log_host_of(host, log_hosts)
                if log_host is None and any(log_host_of(other, log_hosts) for other in hosts if other != host):
                    # the other hosts are named in the log, this one is not: its lines are not in the output
                    continue
                out.setdefault(host, []).extend(_judge_nccl_network(by_name[host], record, debug, log_host))
    return out


RELATIVE_CHECK = "benchmarks.allreduce_relative"
RELATIVE_WHAT = "single-node all-reduce busbw"


def profile_size(node) -> int | None:
    """The profile's ``thresholds.allreduce_single_node.message_size`` (bytes), None when it names none."""
    return (profile_value(node.profile, "thresholds.allreduce_single_node")[0] or {}).get("message_size")


def single_node_figure(node) -> tuple:
    """``(figure, size)``: the vote of the node's finished whole-node single-node runs at :func:`profile_size` (else
    their largest size), of the figures at that size only; ``(None, None)`` without one."""
    read = [busbw_at(_parsed(record), profile_size(node)) for record in records_of(node)
            if benchmark_kind(record) == "allreduce_single" and not figure_problem(record)
            and not ranks_problem(node, record)]
    # an implausible figure (benchmarks.allreduce_single fails it) is no member of the cohort's median
    read = [(value, size) for value, size in read if value is not None and not implausible_busbw(node, {}, value)]
    size = largest_size(size for _value, size in read)
    values = [value for value, at in read if at == size]
    return vote(values, node.settings.get(VOTE_SETTING) or "median")[0], size


def _sizes_words(by_size) -> str:
    """``busbw at different message sizes is not compared: the cohort's figures are at 4 GiB (3 nodes), 128 MiB
    (1 node), each held to the median at its size``: ``by_size`` is ``{size: [node, ...]}``."""
    sizes = sorted(by_size, key=lambda size: -1 if size is None else size, reverse=True)
    counts = ["%s (%d node%s)" % (size_words(size), len(by_size[size]), "" if len(by_size[size]) == 1 else "s")
              for size in sizes]
    return "busbw at different message sizes is not compared: the cohort's figures are at %s, each held to the " \
        "median at its size" % ", ".join(counts)


@fleet_check(RELATIVE_CHECK)
def check_allreduce_relative(nodes):
    """Single-node busbw of each node against its cohort's median at the same message size (:func:`single_node_figure`),
    each node held to its own profile's ``fleet.max_below_median`` (checks/fleet.py ``cohort_relative``)."""
    out = {}
    for members in cohorts(nodes).values():
        read = {node.name: single_node_figure(node) for node in members}
        if all(value is None for value, _size in read.values()):
            continue
        by_size = {}
        for node in members:
            value, size = read[node.name]
            if value is None:
                out[node.name] = [result(RELATIVE_CHECK, SKIP, "not judged: no %s for this node" % RELATIVE_WHAT)]
            else:
                by_size.setdefault(size, []).append(node)
        split = _sizes_words(by_size) if len(by_size) > 1 else None
        for size, group in by_size.items():
            what = "%s at %s" % (RELATIVE_WHAT, size_words(size))
            figures = {node.name: read[node.name][0] for node in group}
            judged = cohort_relative(group, figures, RELATIVE_CHECK, what, "GB/s")
            for node in group:
                # which size judged the node and why, where it is not its profile's size (as allreduce_single says)
                notes = [note for note in (size_reason(size, profile_size(node)), split) if note]
                out[node.name] = [dict(item, message="; ".join([item["message"]] + notes))
                                  for item in judged[node.name]]
    return out


# --- the pair search -----------------------------------------------------------------------------------

SEARCH_LABEL = "pair_search"


def search_label(mode, confirm, seed):
    """The ``group`` label of every pair run of one search: ``pair_search mode=M confirm=C seed=S``."""
    return "%s mode=%s confirm=%d seed=%s" % (SEARCH_LABEL, mode, int(confirm), seed)


def parse_search_label(text):
    """``{mode, confirm, seed}`` from a :func:`search_label` (``{}`` for any other label)."""
    words = str(text or "").split()
    if not words or words[0] != SEARCH_LABEL:
        return {}
    fields = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    out = {}
    if fields.get("mode"):
        out["mode"] = fields["mode"]
    if str(fields.get("confirm", "")).isdigit():
        out["confirm"] = int(fields["confirm"])
    if fields.get("seed"):
        out["seed"] = fields["seed"]
    return out


# Outcomes of a pair run that measured nothing of the pair: it never started (NOT_RUN_OUTCOMES: its first host did not
# answer the task) or its launcher could not start it (ssh to the second host failed). No evidence of a slow pair.
PAIR_NOT_MEASURED_OUTCOMES = NOT_RUN_OUTCOMES + ("launcher_error",)


def lost_hosts(records) -> dict[str, int]:
    """``{host: round}``: the hosts that did not answer their pair run's task (outcome ``unreachable``, recorded for
    the run's first host, the one bench_run ran on), with the first round they did not answer in."""
    lost: dict[str, int] = {}
    for record in records:
        hosts = hosts_of(record)
        if record.get("outcome") == "unreachable" and hosts:
            rnd = record.get("round") if isinstance(record.get("round"), int) else 0
            lost[hosts[0]] = min(rnd, lost.get(hosts[0], rnd))
    return lost


def pair_not_measured(record: dict, lost: dict | None = None) -> str | None:
    """Why a pair run is no measurement of its pair (``unreachable: <reason>``), else None (a figure, or a run that
    failed on its own: a hang or a crash is the pair's fault, slow). A failed run with a host lost by then
    (:func:`lost_hosts`) is not measured either: a host that stopped answering is no evidence against its partner."""
    outcome = record.get("outcome")
    if outcome in (None, "ok"):
        return None
    rnd = record.get("round") if isinstance(record.get("round"), int) else 0
    gone = sorted(host for host in set(hosts_of(record)) if (lost or {}).get(host, rnd + 1) <= rnd)
    if outcome not in PAIR_NOT_MEASURED_OUTCOMES and not gone:
        return None
    reason = " ".join(str(record.get("reason") or "no reason recorded").split())[:200]
    words = "%s (%s)" % (outcome.replace("_", " "), reason)
    if gone:
        words += "; %s did not answer from round %d on" % (" and ".join(gone), min(lost[host] for host in gone))
    return words


def unmeasured_pairs(records, lost: dict | None = None) -> dict:
    """``{(a, b): [why, one per run]}``: the pair runs that measured nothing (:func:`pair_not_measured`)."""
    out: dict = {}
    for record in records:
        hosts = list(dict.fromkeys(hosts_of(record)))
        why = pair_not_measured(record, lost) if len(hosts) == 2 else None
        if why and why not in out.get(pair_key(hosts[0], hosts[1]), []):
            out.setdefault(pair_key(hosts[0], hosts[1]), []).append(why)
    return out


def pair_measurements(records, lost: dict | None = None):
    """``{(a, b): [figure or None per round]}`` from pair records, rounds in order.

    The runs of one pair in one round (repeats) vote by median; a failed run is None. A pair run in
    two rounds (a confirmation run) has two measurements; the search judges the best of them. A run
    that measured nothing (:func:`pair_not_measured`, with the hosts ``lost``) is no measurement.
    """
    runs = {}
    for record in records:
        hosts = list(dict.fromkeys(hosts_of(record)))
        if len(hosts) != 2 or pair_not_measured(record, lost):
            continue
        value = None if figure_problem(record) else _parsed(record).get("busbw_at_largest_size_gbs")
        runs.setdefault(pair_key(hosts[0], hosts[1]), {}).setdefault(record.get("round"), []).append(value)
    out = {}
    for pair, by_round in runs.items():
        values = []
        for rnd in sorted(by_round, key=lambda key: (key is None, key if isinstance(key, int) else 0)):
            known = [value for value in by_round[rnd] if value is not None]
            values.append(median(known) if known else None)
        out[pair] = values
    return out


def search_summary(verdict, mode, rounds_used):
    """``2 bad node(s) and 0 bad link(s) named in 5 round(s) (adaptive)``."""
    return "%d bad node(s) and %d bad link(s) named in %d round(s) (%s)" % (
        len(verdict["bad_nodes"]), len(verdict["bad_links"]), rounds_used, mode or "mode not recorded")


def unrun_pair_reasons(node) -> list[str]:
    """Why the node ran no pair, from its own pair-search records of one host (the preflight's missing_binary,
    launcher_error or skipped record, whose reason names the tool and the fix), each once."""
    reasons = []
    for record in records_of(node):
        if benchmark_kind(record) != "allreduce_pair" or len(set(hosts_of(record))) > 1:
            continue
        if record.get("outcome") in (None, "ok"):
            continue
        reason = " ".join(str(record.get("reason") or "no reason recorded").split())[:300]
        text = "%s: %s" % (record.get("outcome"), reason)
        if text not in reasons:
            reasons.append(text)
    return reasons


def not_measured_words(unmeasured: dict, name: str) -> str:
    """``a-d: unreachable (reason), b-d: ...``: the pairs with ``name`` that were not measured, and why."""
    return ", ".join("%s-%s: %s" % (pair[0], pair[1], "; ".join(whys))
                     for pair, whys in sorted(unmeasured.items()) if name in pair)


@fleet_check("benchmarks.pair_search")
def check_pair_search(nodes):
    """The bad-node search's verdict: convicted nodes and links fail, naming the pairs."""
    records = _all_records(nodes, "allreduce_pair")
    if not records:
        return {}
    found = {}
    for record in records:
        found.update(parse_search_label(record.get("group")))
    mode, confirm = found.get("mode"), found.get("confirm", 1)
    # a run over fewer ranks than the pair's GPUs fails on its own and is no figure of the search
    by_name = {node.name: node for node in nodes}
    short_runs = {}
    for record in records:
        problem = pair_ranks_problem(by_name, record)
        if problem:
            hosts = list(dict.fromkeys(hosts_of(record)))
            short_runs.setdefault(pair_key(hosts[0], hosts[1]), []).append((problem, _parsed(record)["ranks"]))
    rank_items = {}
    for pair, problems in sorted(short_runs.items()):
        runs = " (%d runs)" % len(problems) if len(problems) > 1 else ""
        for host in pair:
            rank_items.setdefault(host, []).append(result(
                "benchmarks.pair_search", FAIL, "pair %s-%s%s: %s" % (pair[0], pair[1], runs, problems[0][0]),
                measured="%d ranks" % problems[0][1], expected="one rank per GPU of both nodes", subject="%s-%s" % pair))
    records_judged = [record for record in records if not pair_ranks_problem(by_name, record)]
    lost = lost_hosts(records_judged)
    results = pair_measurements(records_judged, lost)
    # a pair whose every run measured nothing (a host lost, a launcher that could not start it): not measured, not slow
    unmeasured = {pair: whys for pair, whys in unmeasured_pairs(records_judged, lost).items() if pair not in results}
    tolerance = float(nodes[0].settings.get(TOLERANCE_SETTING) or DEFAULT_TOLERANCE)
    names = [node.name for node in nodes]
    measured = {host for pair in results for host in pair}
    # the absolute floor: a fleet slow everywhere has no fast pair for the relative rule to compare with
    absolute = nic_floor([nic_aggregate(node) for node in nodes if node.name in measured])
    floor = absolute["floor"] if absolute else None
    verdict = infer(names, results, tolerance=tolerance, floor=floor, confirm=confirm)
    rounds = sorted({record.get("round") for record in records if record.get("round") is not None})
    summary = search_summary(verdict, mode, len(rounds))
    # 25 % is a gpufleet policy (docs/baselines.md 9), not a published figure: the result says so
    policy = "policy (docs/baselines.md 9)" if nodes[0].settings.get(TOLERANCE_SETTING) is None else \
        "site setting %s" % TOLERANCE_SETTING
    source = policy + (": bad-node search (gpufleet/plan/pair_search.py%s): slow = more than %.0f%% below the median of "
                       "the best pairs%s%s; %d pair(s), %d round(s)") % (
        ", %s, seed %s" % (mode, found["seed"]) if mode and found.get("seed") else "", tolerance * 100,
        " or below the absolute floor %s GB/s (%s)" % (num(floor), absolute["source"]) if absolute else " (no absolute floor: NIC aggregate unknown)",
        ", a slow pair convicts only once a confirmation run is slow too" if confirm > 1 else "", len(results), len(rounds))
    limit = verdict["limit"]
    relative = None if verdict["reference"] is None else verdict["reference"] * (1 - tolerance)
    pending = set(verdict["pending"])

    def rule(pairs):
        """Which rule made these pairs slow: the absolute floor, the relative rule, or both."""
        figures = [best(results.get(pair)) for pair in pairs]
        below_floor = floor is not None and all(value is None or value < floor for value in figures)
        below_relative = relative is not None and all(value is None or value < relative for value in figures)
        if below_floor and below_relative:
            return "convicted by both rules: below the absolute floor %s GB/s and the relative limit %s GB/s" % (
                num(floor), num(round(relative, 2)))
        if below_floor:
            return "convicted by the absolute floor %s GB/s (the relative limit %s GB/s alone would pass)" % (
                num(floor), num(round(relative, 2)) if relative is not None else "none")
        return "convicted by the relative rule (limit %s GB/s%s)" % (
            num(round(relative, 2)) if relative is not None else "none", ", absolute floor %s GB/s" % num(floor) if floor is not None else "")

    def words(pair):
        values = measurements(results.get(pair))
        value = best(values)
        text = "%s-%s %s" % (pair[0], pair[1], "no figure" if value is None else "%s GB/s" % num(round(value, 2)))
        if len(values) > 1:
            text += " (best of %d runs: %s)" % (len(values), ", ".join("-" if item is None else num(round(item, 2)) for item in values))
        return text

    out = {}
    for node in nodes:
        mine = [pair for pair in results if node.name in pair]
        missing = not_measured_words(unmeasured, node.name)
        if not mine and node.name in rank_items:
            out[node.name] = rank_items[node.name]
            continue
        if not mine and missing and not left_out_of_rdma(node, nodes):
            message = "not measured: no pair with this node produced a figure: %s; search: %s" % (missing, summary)
            out[node.name] = [result("benchmarks.pair_search", SKIP, message, subject=node.name)]
            continue
        if not mine:
            why = left_out_of_rdma(node, nodes)
            unrun = unrun_pair_reasons(node)
            out[node.name] = [result("benchmarks.pair_search", FAIL, "%s; in no pair of the search" % why, measured="no RDMA rail",
                                     expected="Active RDMA ports on the compute rails", subject=node.name) if why else
                              # the preflight's record names the missing binary or launcher and the fix:
                              # unverified, so INCOMPLETE
                              result("benchmarks.pair_search", SKIP,
                                     "not judged: the node was in no measured pair: %s" % "; ".join(unrun))
                              if unrun else
                              result("benchmarks.pair_search", SKIP, "not judged: the node was in no measured pair")]
            continue
        items = []
        if node.name in verdict["bad_nodes"]:
            pairs = verdict["bad_nodes"][node.name]
            message = "slow node: every pair with it is slow, %s by %s against nodes proven good (limit %s GB/s); search: %s"
            items.append(result("benchmarks.pair_search", FAIL, message % (
                rule(pairs), ", ".join(words(pair) for pair in pairs), num(round(limit, 2)), summary),
                measured=[best(results[pair]) for pair in pairs], expected=round(limit, 3), threshold_source=source, subject=node.name))
        for pair in verdict["bad_links"]:
            if node.name in pair:
                message = "slow link %s-%s: %s, while both ends are fast with other partners, %s; search: %s"
                items.append(result("benchmarks.pair_search", FAIL, message % (
                    pair[0], pair[1], words(pair), rule([pair]), summary), measured=best(results[pair]), expected=round(limit, 3),
                    threshold_source=source, subject="%s-%s" % pair))
        partners = {pair[0] if pair[1] == node.name else pair[1] for pair in mine}
        if (not items and floor is not None and node.name not in verdict["cleared"] and not partners <= set(verdict["bad_nodes"])
                and all(best(results[pair]) is None or best(results[pair]) < floor for pair in mine)):
            # no pair reached the floor and no partner explains it: the relative rule cannot see a fleet slow everywhere
            message = "below the absolute floor in every pair: %s, convicted by the absolute floor %s GB/s (no pair with it reached it); search: %s"
            items.append(result("benchmarks.pair_search", FAIL, message % (", ".join(words(pair) for pair in sorted(mine)), num(floor), summary),
                                measured=[best(results[pair]) for pair in sorted(mine)], expected=floor, threshold_source=source, subject=node.name))
            out[node.name] = rank_items.get(node.name, []) + items
            continue
        for pair in verdict["unresolved"]:
            if node.name in pair:
                why = "awaits its confirmation run (the search ran out of rounds)" if pair in pending else "not resolved to a node or a link"
                items.append(result("benchmarks.pair_search", WARN, "slow pair %s %s; search: %s" % (words(pair), why, summary),
                                    measured=best(results[pair]), expected=round(limit, 3), threshold_source=source, subject="%s-%s" % pair))
        if missing and items:
            message = "not measured (no figure, not slow): %s; search: %s" % (missing, summary)
            items.append(result("benchmarks.pair_search", WARN, message, subject=node.name))
        if not items:
            # a partner of a lost host: its measured pairs pass, the pairs with the lost host were not measured (WARN)
            tail = "; not measured (no figure, not slow): %s" % missing if missing else ""
            message = "%d pair(s) with this node, none convicts it (limit %s GB/s)%s; search: %s" % (
                len(mine), num(round(limit, 2)) if limit is not None else "none", tail, summary)
            items.append(result("benchmarks.pair_search", WARN if missing else PASS, message, expected=limit,
                                threshold_source=source))
        out[node.name] = rank_items.get(node.name, []) + items
    return out

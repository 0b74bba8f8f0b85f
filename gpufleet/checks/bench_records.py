# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark records (pure): reading a host's records, their kind, and what keeps a run from being a figure.

Reads the benchmark records of each host (``NodeContext.settings["benchmarks"]``, the host record's ``benchmarks``
list, docs/results-schema.md). A record's kind is :func:`benchmark_kind` (its ``kind`` field; records of older runs
without one are read by their name there, and only there). The checks of checks/benchmarks.py (and compute.py) read
records through here.

- A run that never started on the node (``outcome`` in :data:`NOT_RUN_OUTCOMES`: the tool is not installed, the
  preflight skipped it) is not verified (:func:`not_run`).
- A run that started and did not finish (``outcome`` hang, crash, launcher_error, failed) is named by
  :func:`outcome_problem` (a hang whose reason says it hung is not called a hang twice): it is never read as a figure;
  nor is a table a row of which another rank's output cut (parsed ``damaged``), even after exit 0
  (:func:`figure_problem`).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Sequence

from gpufleet.checks.fixes import launcher_fix
from gpufleet.checks.fleet import median
from gpufleet.checks.model import NodeContext
from gpufleet.checks.profiles import profile_value

# A benchmark record as the host record holds it (docs/results-schema.md): foreign JSON, read field by field
Record = dict[str, Any]

VOTE_SETTING = "gpufleet_benchmark_vote"
ALLREDUCE_KINDS = ("allreduce_single", "allreduce_multi", "allreduce_pair")
NCCL_ENV_SETTING = "gpufleet_nccl_env"

# Outcomes of a run that never started on the node: nothing was measured, so its item is not verified (INCOMPLETE
# where the level requires it), never failed. "unreachable": the node did not answer the benchmark's task.
NOT_RUN_OUTCOMES = ("skipped", "missing_binary", "unreachable")
# A reason that says the run hung ("hung: the table header was printed and no result row followed", nccl-tests' parser)
HUNG_WORD = re.compile(r"\bhung\b", re.IGNORECASE)


def records_of(node: NodeContext) -> list[Record]:
    """The node's benchmark records (a list of dicts)."""
    records = node.settings.get("benchmarks") or []
    return [record for record in records if isinstance(record, dict)]


def parsed_of(record: Record) -> dict[str, Any]:
    """The record's ``parsed`` output, ``{}`` when it has none."""
    parsed = record.get("parsed")
    return parsed if isinstance(parsed, dict) else {}


def hosts_of(record: Record) -> list[str]:
    """Inventory names of the hosts of a run: the record's ``hosts``, else ``parsed.hosts``."""
    hosts = record.get("hosts")
    if isinstance(hosts, list) and hosts:
        return [str(host) for host in hosts]
    return [str(host) for host in parsed_of(record).get("hosts") or []]


def benchmark_kind(record: Record) -> Optional[str]:
    """The kind of a benchmark record (one of results/store.py ``BENCHMARK_KINDS``): its ``kind`` field.

    Every reader asks here. The writers set ``kind``; a record written without one (by an older run)
    is read by its name, as such records always were: ``all_reduce_perf*`` is ``allreduce_single``
    with at most one host (:func:`hosts_of`), ``allreduce_pair`` with two, ``allreduce_multi`` with
    more; ``iperf3*`` is ``iperf3_concurrent`` when the environment's ``GPUFLEET_IPERF3_MODE`` or the
    name says concurrent, else ``iperf3``; any other name's first word is its kind (None without a name).
    """
    if record.get("kind"):
        kind: str = record["kind"]
        return kind
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


def all_records(nodes: Sequence[NodeContext], kind: str) -> list[Record]:
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


def label_fields(text: Any) -> dict[str, str]:
    """``{word: value}`` of the ``word=value`` words of a record's ``group`` label (``launch=mpirun gpus=8``)."""
    return dict(word.split("=", 1) for word in str(text or "").split() if "=" in word)


# --- why a run is no figure -----------------------------------------------------------------------------


def not_run(record: Record) -> Optional[str]:
    """``"not verified: <name> was not run: <outcome> (<reason>)"`` for a run that never started, else None."""
    outcome = record.get("outcome")
    if outcome not in NOT_RUN_OUTCOMES:
        return None
    reason = " ".join(str(record.get("reason") or "").split())[:300]
    return "not verified: %s was not run: %s%s" % (record.get("name") or "the benchmark", outcome.replace("_", " "),
                                                   " (%s)" % reason if reason else "")


def outcome_problem(record: Record) -> Optional[str]:
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


def run_problem(record: Record) -> Optional[str]:
    """:func:`outcome_problem`, or why the output says the run failed although it exited 0 (``failed``, its ``cause``).

    For the checks that read a run's NCCL_DEBUG evidence (algorithm, NVLS, transports): what a run
    that failed printed about its set-up is no evidence of what a finished run would use.
    """
    problem = outcome_problem(record)
    if problem:
        return problem
    parsed = parsed_of(record)
    if not parsed:
        why = "no output the parser could read"
    elif parsed.get("failed"):
        why = parsed.get("cause") or "the output says it failed"
    else:
        return None
    return "%s failed: %s" % (record.get("name") or "benchmark", " ".join(str(why).split())[:200])


def figure_problem(record: Record) -> Optional[str]:
    """:func:`outcome_problem`, or why a run's table is no figure although the run exited 0: a result row cut by
    another process's output (parsers/nccl_tests.py ``damaged``): the rows before it are a part of the sweep."""
    problem = outcome_problem(record)
    if problem or not parsed_of(record).get("damaged"):
        return problem
    return run_problem(record)


def not_validated(record: Record) -> Optional[str]:
    """Why a run's ``#wrong`` says nothing (it ran with ``-c 0``), else None."""
    command = [str(part) for part in record.get("command") or []]
    asked = any(part in ("-c", "--check") and following == "0" for part, following in zip(command, command[1:]))
    asked = asked or any(part in ("-c0", "--check=0") for part in command)
    parsed = parsed_of(record)
    if asked or parsed.get("validated") is False:
        said = "validation: 0" if (parsed.get("params") or {}).get("validation") == 0 else "#wrong N/A"
        return "%s ran with -c 0 (%s): its results were not checked, #wrong says nothing" % (
            record.get("name") or "all_reduce_perf", said if parsed.get("validated") is False else "command line")
    return None


# --- figures ---------------------------------------------------------------------------------------------


def busbw_at(parsed: dict[str, Any], size: Optional[int]) -> tuple[Optional[float], Optional[int]]:
    """``(busbw, size judged)``: out-of-place busbw of the last row at ``size``, else at the largest size."""
    rows = [row for row in parsed.get("rows") or [] if isinstance(row.get("out_of_place"), dict)]
    if size is not None:
        at = [row for row in rows if row.get("size_bytes") == size and row["out_of_place"].get("busbw_gbs") is not None]
        if at:
            return at[-1]["out_of_place"]["busbw_gbs"], size
    if parsed.get("busbw_at_largest_size_gbs") is not None:
        return parsed["busbw_at_largest_size_gbs"], parsed.get("largest_size_bytes")
    return None, None


def largest_size(sizes: Iterable[Optional[int]]) -> Optional[int]:
    """The largest known size of ``sizes`` (the size a node's figures are judged at), None when none is known."""
    known = [size for size in sizes if size is not None]
    return max(known) if known else None


def voted(values: Sequence[float], how: str = "median") -> float:
    """The judged figure of one or more repeats: their median, or with ``how="best"`` the best of them."""
    judged: float = max(values) if how == "best" else median(values)
    return judged


def vote(values: Sequence[float], how: str = "median") -> tuple[Optional[float], Optional[float], Optional[float]]:
    """``(judged figure, min, max)`` of repeats; ``how`` is ``median`` or ``best``."""
    if not values:
        return None, None, None
    return voted(values, how), min(values), max(values)


def fell_back(parsed: dict[str, Any]) -> bool:
    """True when the NCCL log shows the network transport was sockets only (no NET/IB)."""
    debug = parsed.get("debug") or {}
    transports = parsed.get("transports") or debug.get("transports") or {}
    if parsed.get("fallback_to_socket") or debug.get("fallback_to_socket"):
        return True
    names = set(transports)
    return "NET/Socket" in names and not any(name.startswith("NET/IB") for name in names)


# --- the node a run measured -----------------------------------------------------------------------------


def node_gpu_count(node: NodeContext) -> tuple[Optional[int], Optional[str]]:
    """``(GPU count, where from)``: the node's GPU facts, else the claim's ``gpu_count``, else the profile's."""
    gpu = node.group("gpu") or {}
    if isinstance(gpu.get("gpu_count"), int):
        return gpu["gpu_count"], "GPU facts"
    claim = node.claim or {}
    if isinstance(claim.get("gpu_count"), int):
        return claim["gpu_count"], "claim"
    expected, _source = profile_value(node.profile, "expect.gpu_count")
    return (expected, "profile %s" % node.profile.get("name")) if isinstance(expected, int) else (None, None)


def ranks_problem(node: NodeContext, record: Record) -> Optional[str]:
    """Why a single-node run does not measure the whole node (one rank; fewer or more ranks than GPUs), else None."""
    parsed = parsed_of(record)
    if parsed.get("single_rank"):
        return "1 rank: busbw is 0 by definition (nccl-tests scales algbw by 2(n-1)/n); run one rank per GPU"
    ranks = parsed.get("ranks")
    gpus, where = node_gpu_count(node)
    if isinstance(ranks, int) and isinstance(gpus, int) and ranks != gpus:
        return "%d of %d GPUs in the run (%d GPUs by the %s): the figure is not the node's" % (ranks, gpus, gpus, where)
    return None


def active_rdma_ports(node: NodeContext) -> Optional[list[str]]:
    """Active RDMA ports (``dev/port``) in the node's facts; None when no NIC facts."""
    nic = node.group("nic")
    if nic is None:
        return None
    return ["%s/%s" % (dev.get("device"), port.get("port"))
            for dev in nic.get("rdma") or [] for port in dev.get("ports") or []
            if port.get("state") == "Active"]

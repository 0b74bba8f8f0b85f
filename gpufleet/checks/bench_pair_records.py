# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records of the bad-node search (pure): its label, its pairs' measurements, the pair runs that measured nothing.

The per-pair figures of the search are ``allreduce_pair`` records; a pair's runs in different rounds are its
measurements, repeats in one round vote by median (:func:`pair_measurements`). Every pair run of one search carries
its mode, confirmation and seed in its ``group`` label (:func:`search_label`). A pair run that never started, or whose
launcher could not start it, or one with a host that stopped answering, measured nothing (:func:`pair_not_measured`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from gpufleet.checks.bench_records import (NOT_RUN_OUTCOMES, Record, benchmark_kind, figure_problem, hosts_of,
                                           node_gpu_count, parsed_of, records_of)
from gpufleet.checks.fleet import median
from gpufleet.checks.model import NodeContext
from gpufleet.plan.pair_search import pair_key

# Two hosts of a pair, in pair_key's order
Pair = tuple[str, str]

SEARCH_LABEL = "pair_search"

# Outcomes of a pair run that measured nothing of the pair: it never started (NOT_RUN_OUTCOMES: its first host did not
# answer the task) or its launcher could not start it (ssh to the second host failed). No evidence of a slow pair.
PAIR_NOT_MEASURED_OUTCOMES = NOT_RUN_OUTCOMES + ("launcher_error",)


def search_label(mode: str, confirm: int, seed: Any) -> str:
    """The ``group`` label of every pair run of one search: ``pair_search mode=M confirm=C seed=S``."""
    return "%s mode=%s confirm=%d seed=%s" % (SEARCH_LABEL, mode, int(confirm), seed)


def parse_search_label(text: Any) -> dict[str, Any]:
    """``{mode, confirm, seed}`` from a :func:`search_label` (``{}`` for any other label)."""
    words = str(text or "").split()
    if not words or words[0] != SEARCH_LABEL:
        return {}
    fields = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    out: dict[str, Any] = {}
    if fields.get("mode"):
        out["mode"] = fields["mode"]
    if str(fields.get("confirm", "")).isdigit():
        out["confirm"] = int(fields["confirm"])
    if fields.get("seed"):
        out["seed"] = fields["seed"]
    return out


def pair_ranks_problem(by_name: Mapping[str, NodeContext], record: Record) -> Optional[str]:
    """Why a pair run does not load every GPU of both nodes (``2 of 16 GPUs in the pair run``), else None.

    One rank per GPU of both nodes puts traffic on every rail; fewer ranks (``-np 2`` on two 8-GPU nodes
    exercises one NIC of eight) measure a part of the pair, so the figure is not the pair's. Unknown when
    the run's rank count or either node's GPU count is.
    """
    hosts = list(dict.fromkeys(hosts_of(record)))
    ranks = parsed_of(record).get("ranks")
    if len(hosts) != 2 or not isinstance(ranks, int) or any(host not in by_name for host in hosts):
        return None
    counts = [(gpus, host, source) for host, (gpus, source) in ((host, node_gpu_count(by_name[host])) for host in hosts)
              if isinstance(gpus, int)]
    if len(counts) < len(hosts):
        return None
    total = sum(gpus for gpus, _host, _source in counts)
    if ranks == total:
        return None
    where = " + ".join("%d on %s (%s)" % count for count in counts)
    if ranks < total:
        return "%d of %d GPUs in the pair run (%s): one rank per GPU of both nodes puts traffic on every rail; " \
            "the figure is not the pair's" % (ranks, total, where)
    return "%d ranks for %d GPUs in the pair run (%s): the GPUs are oversubscribed; the figure is not the pair's" % (
        ranks, total, where)


def _round_of(record: Record) -> int:
    """The record's search round (0 when it names none)."""
    rnd = record.get("round")
    return rnd if isinstance(rnd, int) else 0


def lost_hosts(records: Iterable[Record]) -> dict[str, int]:
    """``{host: round}``: the hosts that did not answer their pair run's task (outcome ``unreachable``, recorded for
    the run's first host, the one bench_run ran on), with the first round they did not answer in."""
    lost: dict[str, int] = {}
    for record in records:
        hosts = hosts_of(record)
        if record.get("outcome") == "unreachable" and hosts:
            rnd = _round_of(record)
            lost[hosts[0]] = min(rnd, lost.get(hosts[0], rnd))
    return lost


def pair_not_measured(record: Record, lost: Optional[dict[str, int]] = None) -> Optional[str]:
    """Why a pair run is no measurement of its pair (``unreachable: <reason>``), else None (a figure, or a run that
    failed on its own: a hang or a crash is the pair's fault, slow). A failed run with a host lost by then
    (:func:`lost_hosts`) is not measured either: a host that stopped answering is no evidence against its partner."""
    outcome = record.get("outcome")
    if outcome in (None, "ok"):
        return None
    rnd = _round_of(record)
    lost = lost or {}
    gone = sorted(host for host in set(hosts_of(record)) if lost.get(host, rnd + 1) <= rnd)
    if outcome not in PAIR_NOT_MEASURED_OUTCOMES and not gone:
        return None
    reason = " ".join(str(record.get("reason") or "no reason recorded").split())[:200]
    words = "%s (%s)" % (outcome.replace("_", " "), reason)
    if gone:
        words += "; %s did not answer from round %d on" % (" and ".join(gone), min(lost[host] for host in gone))
    return words


def unmeasured_pairs(records: Iterable[Record], lost: Optional[dict[str, int]] = None) -> dict[Pair, list[str]]:
    """``{(a, b): [why, one per run]}``: the pair runs that measured nothing (:func:`pair_not_measured`)."""
    out: dict[Pair, list[str]] = {}
    for record in records:
        hosts = list(dict.fromkeys(hosts_of(record)))
        why = pair_not_measured(record, lost) if len(hosts) == 2 else None
        if why and why not in out.get(pair_key(hosts[0], hosts[1]), []):
            out.setdefault(pair_key(hosts[0], hosts[1]), []).append(why)
    return out


def pair_measurements(records: Iterable[Record],
                      lost: Optional[dict[str, int]] = None) -> dict[Pair, list[Optional[float]]]:
    """``{(a, b): [figure or None per round]}`` from pair records, rounds in order.

    The runs of one pair in one round (repeats) vote by median; a failed run is None. A pair run in
    two rounds (a confirmation run) has two measurements; the search judges the best of them. A run
    that measured nothing (:func:`pair_not_measured`, with the hosts ``lost``) is no measurement.
    """
    runs: dict[Pair, dict[Any, list[Optional[float]]]] = {}
    for record in records:
        hosts = list(dict.fromkeys(hosts_of(record)))
        if len(hosts) != 2 or pair_not_measured(record, lost):
            continue
        value = None if figure_problem(record) else parsed_of(record).get("busbw_at_largest_size_gbs")
        runs.setdefault(pair_key(hosts[0], hosts[1]), {}).setdefault(record.get("round"), []).append(value)
    out: dict[Pair, list[Optional[float]]] = {}
    for pair, by_round in runs.items():
        values: list[Optional[float]] = []
        for rnd in sorted(by_round, key=lambda key: (key is None, key if isinstance(key, int) else 0)):
            known = [value for value in by_round[rnd] if value is not None]
            values.append(median(known) if known else None)
        out[pair] = values
    return out


def unrun_pair_reasons(node: NodeContext) -> list[str]:
    """Why the node ran no pair, from its own pair-search records of one host (the preflight's missing_binary,
    launcher_error or skipped record, whose reason names the tool and the fix), each once."""
    reasons: list[str] = []
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

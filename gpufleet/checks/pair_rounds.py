# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The next round of the all-reduce bad-node search, rebuilt from the records of a results directory.

The search (``gpufleet.plan.pair_search.PairSearch``) is rebuilt from its settings (hosts in
order, mode, seed, tolerance, confirmation) and this search's ``allreduce_pair`` records (those
whose ``job_id`` starts with ``<job>-pair-``): rounds ``0 .. round - 1`` are planned again and fed
the figures recorded for them (read as the ``benchmarks.pair_search`` check reads them), then
round ``round`` is planned. The same settings and records always give the same plan, so an
interrupted search continues where it stopped; a record the plan never scheduled (another seed,
other hosts) is a :class:`PlanError`. It sits with the checks, not in ``gpufleet.plan``, because
it reads the figures through the checks (which import the plan stage, never the reverse).

The search plans with the absolute floor the ``benchmarks.pair_search`` check judges by (the NIC-bound
floor of the searched nodes, :func:`search_floor`, from their recorded facts, claim and profile): a pair
slow only by that floor is then re-measured like one slow by the relative rule, and the check finds
its confirmation run instead of a pair still awaiting one.
The action ``gpufleet.acceptance.pair_search_plan`` calls :func:`search_records`, :func:`search_floor`
and :func:`plan`.
"""

from __future__ import annotations

from typing import Any, Protocol

from gpufleet.checks.bench_floors import NicFloor
from gpufleet.checks.benchmarks import (benchmark_kind, lost_hosts, nic_aggregate, nic_floor, pair_measurements,
                                        unmeasured_pairs)
from gpufleet.checks.model import NodeContext
from gpufleet.checks.verdict import Judge, VerdictError
from gpufleet.plan.pair_search import DEFAULT_TOLERANCE, PairSearch


class PlanError(Exception):
    """Settings or records the search cannot be rebuilt from."""


class RunRecords(Protocol):
    """What this module reads of a results directory (gpufleet/results/store.py ``RunDir``, a stage above)."""

    def host_records(self) -> dict[str, Any]:
        """Every host record in the directory, by host name."""


def search_records(run: RunRecords, job: str) -> dict[int, list[dict[str, Any]]]:
    """This search's ``allreduce_pair`` records by round: ``{round: [record]}``."""
    prefix = "%s-pair-" % job
    by_round: dict[int, list[dict[str, Any]]] = {}
    for record in run.host_records().values():
        for bench in record.get("benchmarks") or []:
            if not isinstance(bench, dict) or benchmark_kind(bench) != "allreduce_pair":
                continue
            if not str(bench.get("job_id") or "").startswith(prefix) or not isinstance(bench.get("round"), int):
                continue
            by_round.setdefault(bench["round"], []).append(bench)
    return by_round


def search_floor(run: RunRecords, hosts: list[str], judge: Judge | None = None) -> NicFloor | None:
    """The absolute floor of the search over ``hosts``: :func:`benchmarks.nic_floor` ``{floor, ..., source}`` or None.

    Each host as the verdict will see it, from its record in ``run``: its facts, its claim and the profile
    its recorded profile request chooses (``judge``, else the shipped profiles). Taken over every host of
    the search, not over the ones measured so far, so that it is the same at every round and a replayed
    plan stays the plan that ran. None when no host's NIC aggregate is known (the relative rule alone).
    """
    records = run.host_records()
    nodes = []
    for host in hosts:
        record = records.get(host)
        if not isinstance(record, dict):
            continue
        facts = record.get("facts") or {}
        request = record.get("profile_request") or {}
        choice = {"claim": record.get("claim"), "profile": request.get("profile"),
                  "overrides": request.get("overrides")}
        try:
            judge = judge or Judge()
            profile = judge.choose(facts, choice)[0]
        except VerdictError:
            # the verdict fails a bad profile choice by name; here the floor rests on the claim and the facts
            profile = None
        nodes.append(NodeContext(host, facts=facts, claim=record.get("claim"), profile=profile))
    return nic_floor([nic_aggregate(node) for node in nodes])


def plan(hosts: list[str], by_round: dict[int, list[dict[str, Any]]], round_index: int, seed: int | str | None,
         mode: str = "adaptive", tolerance: float = DEFAULT_TOLERANCE, confirm: int = 2, max_rounds: int | None = None,
         floor: float | None = None) -> tuple[list[tuple[str, str]], PairSearch]:
    """``(pairs of round round_index, the PairSearch as rebuilt)``; PlanError when the records do not fit.

    ``floor``: the absolute floor in GB/s (:func:`search_floor`), the same at every round of one search.
    """
    search = PairSearch(hosts, seed=seed, tolerance=tolerance, floor=floor, mode=mode, confirm=confirm,
                        max_rounds=max_rounds)
    for index in range(round_index):
        planned = search.next_round()
        # the hosts lost by this round, from its records and those before: the same at every replay of it
        lost = lost_hosts([record for rnd in range(index + 1) for record in by_round.get(rnd, [])])
        got = {pair: values[0] for pair, values in pair_measurements(by_round.get(index, []), lost).items()}
        strays = sorted((set(got) | set(unmeasured_pairs(by_round.get(index, []), lost))) - set(planned))
        if strays:
            raise PlanError("round %d: recorded pairs %s were not planned by this search (seed %s, %d hosts, mode %s): "
                            "the records belong to another search"
                            % (index, ", ".join("-".join(pair) for pair in strays), seed, len(hosts), mode))
        if not planned:
            return [], search
        search.record({pair: got[pair] for pair in planned if pair in got})
        # a planned pair without a figure: its run measured nothing, or its first host left the play and wrote no
        # record
        search.record_unmeasured([pair for pair in planned if pair not in got], lost)
    return search.next_round(), search

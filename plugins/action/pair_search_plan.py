# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.pair_search_plan: the next round of the all-reduce bad-node search.

Runs once, on the controller, and never contacts a node. It rebuilds the search
(``bench/pair_search.PairSearch``) from its settings (hosts in order, mode, seed, tolerance,
confirmation) and the ``allreduce_pair`` records of this search in the results directory (the
records whose ``job_id`` starts with ``<job>-pair-``): it plans rounds ``0 .. round - 1`` again,
feeds each the figures recorded for it, and returns the plan of round ``round``. The same settings
and records always give the same plan, so an interrupted search continues where it stopped, and
a record that the plan never scheduled (another seed, other hosts) fails the task.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from gpufleet.plan.pair_search import DEFAULT_TOLERANCE, MODES, PairSearch, pair_key
from gpufleet.checks.benchmarks import pair_measurements, search_label
from gpufleet.results.store import ResultsError, RunDir, to_plain


class PlanError(Exception):
    """Settings or records the search cannot be rebuilt from."""


def search_records(run, job):
    """This search's ``allreduce_pair`` records by round: ``{round: [record]}``."""
    prefix = "%s-pair-" % job
    by_round = {}
    for record in run.host_records().values():
        for bench in record.get("benchmarks") or []:
            if not isinstance(bench, dict) or bench.get("kind") != "allreduce_pair":
                continue
            if not str(bench.get("job_id") or "").startswith(prefix) or not isinstance(bench.get("round"), int):
                continue
            by_round.setdefault(bench["round"], []).append(bench)
    return by_round


def plan(hosts, by_round, round_index, seed, mode="adaptive", tolerance=DEFAULT_TOLERANCE, confirm=2, max_rounds=None):
    """``(pairs of round round_index, the PairSearch as rebuilt)``; PlanError when the records do not fit."""
    search = PairSearch(hosts, seed=seed, tolerance=tolerance, mode=mode, confirm=confirm, max_rounds=max_rounds)
    for index in range(round_index):
        planned = search.next_round()
        got = {pair: values[0] for pair, values in pair_measurements(by_round.get(index, [])).items()}
        strays = sorted(set(got) - set(planned))
        if strays:
            raise PlanError("round %d: recorded pairs %s were not planned by this search (seed %s, %d hosts, mode %s): the records belong to "
                            "another search" % (index, ", ".join("-".join(pair) for pair in strays), seed, len(hosts), mode))
        if not planned:
            return [], search
        search.record({pair: got[pair] for pair in planned if pair in got})
    return search.next_round(), search


class ActionModule(ActionBase):
    """Plan one round of the pair search from the records so far."""

    TRANSFERS_FILES = False
    BYPASS_HOST_LOOP = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("run_dir", "job", "hosts", "round", "seed", "mode", "tolerance", "confirm", "max_rounds"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        try:
            for name in ("run_dir", "job", "hosts", "round", "seed"):
                if args.get(name) in (None, "", []):
                    raise PlanError("%s is required" % name)
            hosts = [str(host) for host in args["hosts"]]
            if len(set(hosts)) != len(hosts):
                raise PlanError("hosts: each host once")
            mode = str(args.get("mode") or "adaptive")
            if mode not in MODES:
                raise PlanError("mode must be one of %s, not %s" % (", ".join(MODES), mode))
            try:
                round_index = int(args["round"])
                tolerance = float(args["tolerance"]) if args.get("tolerance") is not None else DEFAULT_TOLERANCE
                max_rounds = int(args["max_rounds"]) if args.get("max_rounds") not in (None, "") else None
            except (TypeError, ValueError):
                raise PlanError("round and max_rounds must be whole numbers, tolerance a number") from None
            if round_index < 0 or not 0 < tolerance < 1 or (max_rounds is not None and max_rounds < 1):
                raise PlanError("round must be >= 0, tolerance between 0 and 1, max_rounds >= 1")
            seed = str(args["seed"]).strip()
            seed = int(seed) if seed.isdigit() else seed
            confirm = 2 if boolean(args.get("confirm", True), strict=False) else 1
            run = RunDir.open(args["run_dir"])
            pairs, search = plan(hosts, search_records(run, str(args["job"])), round_index, seed, mode=mode, tolerance=tolerance,
                                 confirm=confirm, max_rounds=max_rounds)
        except (PlanError, ResultsError, OSError) as exc:
            result["failed"] = True
            result["msg"] = str(exc)
            return result
        state = search.current()
        pairs = [list(pair_key(*pair)) for pair in pairs]
        stopped = len(search.rounds) >= search.max_rounds and (state["suspects"] or state["pending"])
        result.update(
            changed=False,
            round=round_index,
            pairs=pairs,
            done=not pairs,
            rounds_used=len(search.rounds),
            max_rounds=search.max_rounds,
            mode=mode,
            seed=seed,
            confirm=confirm,
            group=search_label(mode, confirm, seed),
            bad_nodes=sorted(state["bad_nodes"]),
            bad_links=[list(pair) for pair in state["bad_links"]],
            suspects=list(state["suspects"]),
            pending=[list(pair) for pair in state["pending"]],
            msg=("round %d: %s" % (round_index, ", ".join("-".join(pair) for pair in pairs))) if pairs else
            "search %s after %d round(s) (%s): bad nodes %s, bad links %s" % (
                "stopped at max_rounds" if stopped else "settled", len(search.rounds), mode,
                ", ".join(sorted(state["bad_nodes"])) or "none", ", ".join("-".join(pair) for pair in state["bad_links"]) or "none"),
        )
        return result

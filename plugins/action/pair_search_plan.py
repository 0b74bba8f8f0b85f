# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.pair_search_plan: the next round of the all-reduce bad-node search.

Runs once, on the controller, and never contacts a node. It rebuilds the search
(``gpufleet.plan.pair_search.PairSearch``) from its settings (hosts in order, mode, seed, tolerance,
confirmation) and the ``allreduce_pair`` records of this search in the results directory (the
records whose ``job_id`` starts with ``<job>-pair-``): it plans rounds ``0 .. round - 1`` again,
feeds each the figures recorded for it, and returns the plan of round ``round``. The same settings
and records always give the same plan, so an interrupted search continues where it stopped, and
a record that the plan never scheduled (another seed, other hosts) fails the task.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.checks.benchmarks import search_label
from gpufleet.checks.pair_rounds import PlanError, plan, search_floor, search_records
from gpufleet.plan.pair_search import pair_key
from gpufleet.results.store import ResultsError, RunDir


class ActionModule(LibraryAction):
    """Plan one round of the pair search from the records so far."""

    ARGUMENT_SPEC = documented_spec(__file__)

    BYPASS_HOST_LOOP = False

    def act(self, args, task_vars, result):
        try:
            for name in ("run_dir", "job", "hosts", "seed"):
                if args[name] in ("", []):
                    raise PlanError("%s is required" % name)
            hosts = args["hosts"]
            if len(set(hosts)) != len(hosts):
                raise PlanError("hosts: each host once")
            mode, round_index = args["mode"], args["round"]
            tolerance, max_rounds = args["tolerance"], args["max_rounds"]
            if round_index < 0 or not 0 < tolerance < 1 or (max_rounds is not None and max_rounds < 1):
                raise PlanError("round must be >= 0, tolerance between 0 and 1, max_rounds >= 1")
            seed = args["seed"].strip()
            seed = int(seed) if seed.isdigit() else seed
            confirm = 2 if args["confirm"] else 1
            run = RunDir.open(args["run_dir"])
            # the absolute floor the pair check judges by, so that a pair slow only by it gets its confirmation run
            floor = search_floor(run, hosts)
            pairs, search = plan(hosts, search_records(run, str(args["job"])), round_index, seed, mode=mode, tolerance=tolerance,
                                 confirm=confirm, max_rounds=max_rounds, floor=floor["floor"] if floor else None)
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
            floor=floor["floor"] if floor else None,
            floor_source=floor["source"] if floor else None,
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

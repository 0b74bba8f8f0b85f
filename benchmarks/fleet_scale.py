# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Speed at fleet scale: validate_cluster.yml against a 5-trivial-task baseline, the report at
1,024 and 10,000 nodes, and the bad-node search's rounds.

One command (root for the SSH fleet; ``make timing`` runs it)::

    .venv/bin/python benchmarks/fleet_scale.py --update-doc docs/performance.md
    .venv/bin/python benchmarks/fleet_scale.py --quick          # small sizes, one run each (CI smoke)

Sections (``--sections``, default all three):

``fleet``
    ``playbooks/validate_cluster.yml`` at level quick (facts + checks + report, no benchmarks) on the replayed local
    fleet at ``--local-sizes`` (default 16,64,256 hosts cycling over ``inventories/simulated/nodes/``
    with their claims and ``gpufleet_fact_groups``, ``ansible_connection: local``) and on the SSH fleet
    of ``tests/sshfleet/fleet.sh`` at ``--ssh-sizes`` (default 8,32; root only), and in the same run,
    on the same hosts with the same ansible.cfg/forks/strategy, ``benchmarks/baseline.yml`` (5
    trivial ``command`` tasks). The two alternate run by run (ours, baseline, ours, ...) so that
    machine load falls on both. Each run gets a fresh results directory. Measured per run (see
    time_gather_facts.run_measured): wall s, controller CPU s (every process of the run, node side
    included on the local fleet), peak RSS of the largest single process. A run counts only when it
    exits 0 with every host in the recap and unfailed, and (ours) ``fleet.json`` judged every host.
``report``
    ``render_report`` alone (all four formats) over SYNTHETIC results directories of ``--report-nodes``
    (default 1,024 and 10,000) host records each, cloned from a real run of the replayed fleet; then the time
    headless Chromium takes to open its report.html (browser_load.py; ``--browser-timeout``, default 180 s). It runs
    before the fleet section, whose load would slow the machine it measures.
``search``
    ``pair_search.simulate`` (SYNTHETIC figures): rounds the adaptive search needs to name k = 1..4
    bad nodes among N = ``--search-sizes`` (seeded random placements, ``--search-seeds`` per cell),
    whether every bad node was named, false accusations; and, in round-robin mode, one bad link.

``--update-doc FILE`` rewrites the part of FILE between ``<!-- fleet-scale:begin -->`` and
``<!-- fleet-scale:end -->``. Logs, inventories and ``fleet_scale.json``: ``--out``
(default tests/output/fleet_scale).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import browser_load  # noqa: E402  pylint: disable=import-error,wrong-import-position
import time_gather_facts as tgf  # noqa: E402  pylint: disable=import-error,wrong-import-position

REPO_ROOT = tgf.REPO_ROOT
VALIDATE = os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml")
BASELINE = os.path.join(HERE, "baseline.yml")
DOC_BEGIN = "<!-- fleet-scale:begin -->"
DOC_END = "<!-- fleet-scale:end -->"
COLLECTIONS = os.path.join(REPO_ROOT, "collections")
# pair_search.simulate measures good pairs at 100 and slow ones at 20 (+-3 %): the floor a profile would give.
SEARCH_FLOOR = 50.0

FULL = {"local_sizes": "16,64,256", "ssh_sizes": "8,32", "repeats": 3, "report_nodes": "1024,10000",
        "search_sizes": "8,16,32,64,128,256,512,1024", "search_seeds": 30, "rr_sizes": "8,16,32,64,128,256,512,1024"}
QUICK = {"local_sizes": "4,8", "ssh_sizes": "4", "repeats": 1, "report_nodes": "64",
         "search_sizes": "8,16,32", "search_seeds": 5, "rr_sizes": "8,16"}


# one error for both harnesses: run_harness catches it
HarnessError = tgf.HarnessError


def _sizes(text):
    try:
        sizes = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of whole numbers: %r" % text) from None
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError("sizes must be at least 1: %r" % text)
    return sizes


def _median(values):
    return statistics.median(values) if values else None


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# fleets
# ---------------------------------------------------------------------------------------------

def build_node_dirs(out_dir):
    """Replay wrappers and trees once per node file of inventories/simulated/nodes/ (hosts share them:
    the product only reads them). Returns ``{stem: node file}``."""
    node_files = sorted(glob.glob(os.path.join(tgf.SIM_NODES, "*.yml")))
    if not node_files:
        raise HarnessError("no node files in %s" % tgf.SIM_NODES)
    nodes_dir = os.path.join(out_dir, "nodes")
    proc = subprocess.run([sys.executable, tgf.BUILD_FLEET, nodes_dir] + node_files,
                          capture_output=True, text=True, check=False, timeout=600)
    if proc.returncode != 0:
        raise HarnessError("build_fleet.py failed: %s" % proc.stderr.strip())
    return {os.path.splitext(os.path.basename(path))[0]: path for path in node_files}


# the host variables that ask for a phase past level quick (gpufleet/plan/levels.py asks_for_phase)
PHASE_ASKS = ("gpufleet_benchmarks", "gpufleet_burn_in")


def local_inventory(out_dir, size, stems):
    """Write ``out_dir/local-<size>.yml``: ``size`` hosts cycling over the node files, each with the
    variables of inventories/simulated/ (claim, fact groups, less those of PHASE_ASKS) and its node's replay
    directory."""
    with open(tgf.SIM_INVENTORY, "r", encoding="utf-8") as handle:
        sim_vars = dict((yaml.safe_load(handle) or {}).get("all", {}).get("vars") or {})
    sim_vars.update({"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpufleet_become": False})
    hosts = {}
    names = sorted(stems)
    for index in range(size):
        stem = names[index % len(names)]
        host_vars = {}
        claim_file = os.path.join(os.path.dirname(tgf.SIM_INVENTORY), "host_vars", stem + ".yml")
        if os.path.isfile(claim_file):
            with open(claim_file, "r", encoding="utf-8") as handle:
                host_vars.update(yaml.safe_load(handle) or {})
        # what this harness times is level quick, so no host asks for a phase past it (two demo nodes ask for
        # benchmarks of their own: with them, a sixth of the fleet ran the benchmark plays)
        for variable in PHASE_ASKS:
            host_vars.pop(variable, None)
        host_vars["gpufleet_sim_dir"] = os.path.join(out_dir, "nodes", stem)
        hosts["n%04d-%s" % (index + 1, stem)] = host_vars
    path = os.path.join(out_dir, "local-%d.yml" % size)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("---\n# Written by benchmarks/fleet_scale.py: %d replayed hosts over %s\n" % (size, tgf.SIM_NODES))
        yaml.safe_dump({"all": {"vars": sim_vars, "children": {"fleet_scale": {"hosts": hosts}}}}, handle, sort_keys=False, width=1000)
    return path, sorted(hosts)


def stem_of(host):
    """The node file a harness host replays (``n0001-dgx-a100-nv12`` -> ``dgx-a100-nv12``)."""
    return host.split("-", 1)[1] if host[:1] == "n" and "-" in host else host


# ---------------------------------------------------------------------------------------------
# the harness
# ---------------------------------------------------------------------------------------------

class Harness:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.rows = []
        self.notes = []
        self.report_rows = []
        self.search_rows = []
        self.rr_rows = []
        self.source_run = None
        self.loads = []
        self.mitogen_version, self.mitogen_dir = tgf.mitogen_info()
        self.total_s = 0.0

    @staticmethod
    def log(message):
        print(message, flush=True)

    # -- ansible runs --------------------------------------------------------------------------

    def env(self):
        strategy_dir = None
        if self.args.strategy == "mitogen_linear":
            if not self.mitogen_version:
                raise HarnessError(self.mitogen_dir)
            strategy_dir = self.mitogen_dir
        env = tgf.ansible_env(strategy_dir)
        env["ANSIBLE_COLLECTIONS_PATH"] = COLLECTIONS
        if self.args.strategy not in (None, "mitogen_linear"):
            env["ANSIBLE_STRATEGY"] = self.args.strategy
        for item in self.args.ansible_env or []:
            key, _sep, value = item.partition("=")
            env[key] = value
        return env

    def playbook_argv(self, playbook, inventory, extra):
        argv = [tgf.ansible_playbook(), "-i", inventory]
        if self.args.forks:
            argv += ["--forks", str(self.args.forks)]
        if extra:
            argv += ["-e", json.dumps(extra)]
        for item in self.args.extra_vars or []:
            argv += ["-e", item]
        return argv + [playbook]

    def one_run(self, label, playbook, inventory, hosts, extra, cleanup):
        log_path = os.path.join(self.out, "logs", label + ".log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        if cleanup:
            cleanup()
        load_before = _load()
        result = tgf.run_measured(self.playbook_argv(playbook, inventory, extra), self.env(), log_path, self.args.timeout, cleanup)
        result["load"] = [load_before, _load()]
        with open(log_path, "r", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        reason = tgf.failure_reason(result, text, hosts)
        result["failed"] = "%s (log %s)" % (reason, os.path.relpath(log_path, REPO_ROOT)) if reason else None
        return result

    def check_verdicts(self, run_dir, hosts, expected):
        """None when fleet.json judged every host and hosts of one node file share one verdict (and the
        verdicts of ``expected``, node file -> verdict, when given); else why not."""
        try:
            with open(os.path.join(run_dir, "fleet.json"), "r", encoding="utf-8") as handle:
                fleet = json.load(handle)
        except (OSError, ValueError) as exc:
            return "no fleet.json: %s" % exc
        verdicts = {host: entry.get("verdict") for host, entry in (fleet.get("node_verdicts") or {}).items()}
        if sorted(verdicts) != sorted(hosts):
            return "fleet.json judged %d of %d hosts" % (len(verdicts), len(hosts))
        by_stem = {}
        for host, verdict in verdicts.items():
            by_stem.setdefault(stem_of(host), set()).add(verdict)
        mixed = sorted(stem for stem, seen in by_stem.items() if len(seen) > 1)
        if mixed:
            return "hosts of node file %s got different verdicts" % mixed[0]
        for stem, seen in by_stem.items():
            if stem in expected and expected[stem] != next(iter(seen)):
                return "node file %s: verdict %s here, %s in the first run" % (stem, next(iter(seen)), expected[stem])
            expected.setdefault(stem, next(iter(seen)))
        return None

    def time_fleet(self, fleet, size, inventory, hosts, cleanup=None, expected=None):
        """``repeats`` x (validate_cluster.yml, baseline.yml) on one fleet; append one table row."""
        row = {"fleet": fleet, "hosts": size, "ours": [], "baseline": [], "failed": None}
        self.rows.append(row)
        expected = {} if expected is None else expected
        for repeat in range(1, self.args.repeats + 1):
            for kind in ("ours", "baseline"):
                label = "%s-%d-%s-%d" % (fleet, size, kind, repeat)
                extra = None
                if kind == "ours":
                    run_dir = os.path.join(self.out, "runs", label)
                    if os.path.exists(run_dir):
                        shutil.rmtree(run_dir)
                    # the demo fleet has rejected nodes: the run is timed, its verdicts checked below, not its exit
                    # status; level quick: facts + checks + report, what this harness times (the default level,
                    # standard, would run the benchmarks)
                    extra = {"gpufleet_results_dir": run_dir, "gpufleet_fail_on_verdict": False,
                             "gpufleet_level": "quick"}
                playbook = VALIDATE if kind == "ours" else BASELINE
                result = self.one_run(label, playbook, inventory, hosts, extra, cleanup)
                if kind == "ours" and not result["failed"]:
                    why = self.check_verdicts(run_dir, hosts, expected)
                    if why:
                        result["failed"] = why
                    elif fleet == "local":
                        self.source_run = run_dir
                self.log("  %-5s %4d %-8s run %d: wall %6.1f s  cpu %6.1f s  rss %4.0f MiB  load %s%s" % (
                    fleet, size, kind, repeat, result["wall_s"], result["cpu_s"], result["maxrss_mib"],
                    "/".join("%.1f" % value for value in result["load"] if value is not None),
                    "  FAILED: " + result["failed"] if result["failed"] else ""))
                if result["failed"]:
                    row["failed"] = "%s: %s" % (kind, result["failed"])
                    return
                row[kind].append(result)
                self.loads.extend(value for value in result["load"] if value is not None)

    def run_local(self):
        sizes = self.args.local_sizes
        if not sizes:
            return
        local_dir = os.path.join(self.out, "local")
        self.log("local: building the replayed nodes")
        stems = build_node_dirs(local_dir)
        expected = {}
        for size in sizes:
            inventory, hosts = local_inventory(local_dir, size, stems)
            self.log("local: %d hosts" % size)
            self.time_fleet("local", size, inventory, hosts, expected=expected)
        if expected:
            self.notes.append("local fleet: every host of a node file got the same verdict at every size and in every run (%s)" % ", ".join(
                "%s %s" % (stem, verdict) for stem, verdict in sorted(expected.items())))

    def run_ssh(self):
        for size in self.args.ssh_sizes or []:
            if os.geteuid() != 0:
                self.rows.append({"fleet": "ssh", "hosts": size, "ours": [], "baseline": [],
                                  "failed": "needs root (network namespaces, sshd): skipped"})
                continue
            state = os.path.join(self.out, "sshfleet-%d" % size)
            if os.path.exists(os.path.join(state, "fleet_id")):
                subprocess.run(["bash", tgf.FLEET_SH, "down", "--state", state], capture_output=True, check=False, timeout=300)
            self.log("ssh: bringing up %d hosts" % size)
            try:
                up = subprocess.run(["bash", tgf.FLEET_SH, "up", "--hosts", str(size), "--state", state],
                                    capture_output=True, text=True, check=False, timeout=900)
                if up.returncode != 0:
                    self.rows.append({"fleet": "ssh", "hosts": size, "ours": [], "baseline": [], "failed": "fleet.sh up failed: %s" % (
                        (up.stderr.strip().splitlines() or ["rc %d" % up.returncode])[-1])})
                    continue
                self.time_fleet("ssh", size, os.path.join(state, "inventory.yml"), tgf.ssh_fleet_hosts(state),
                                cleanup=lambda state=state: tgf.close_ssh_masters(state))
            finally:
                subprocess.run(["bash", tgf.FLEET_SH, "down", "--state", state], capture_output=True, check=False, timeout=300)

    # -- the report at scale -------------------------------------------------------------------

    def source_for_report(self):
        """A results directory of a real run of the replayed fleet, one host per node file (made here: the report section
        runs before the fleet section), or the fleet section's largest local run."""
        if self.source_run:
            return self.source_run
        local_dir = os.path.join(self.out, "local")
        stems = build_node_dirs(local_dir)
        inventory, hosts = local_inventory(local_dir, len(stems), stems)
        run_dir = os.path.join(self.out, "runs", "report-source")
        if os.path.exists(run_dir):
            shutil.rmtree(run_dir)
        # the demo fleet has rejected nodes: a run that judged them exits 3 unless told it is report-only
        result = self.one_run("report-source", VALIDATE, inventory, hosts,
                              {"gpufleet_results_dir": run_dir, "gpufleet_fail_on_verdict": False,
                               "gpufleet_level": "quick"}, None)
        if result["failed"]:
            raise HarnessError("the source run for the report failed: %s" % result["failed"])
        return run_dir

    def synthetic_run(self, source, nodes):
        """A results directory of ``nodes`` host records cloned (round robin) from ``source``; SYNTHETIC."""
        target = os.path.join(self.out, "report-synthetic-%d" % nodes)
        if os.path.exists(target):
            shutil.rmtree(target)
        os.makedirs(os.path.join(target, "hosts"))
        os.makedirs(os.path.join(target, "raw"))
        records = []
        for path in sorted(glob.glob(os.path.join(source, "hosts", "*.json"))):
            with open(path, "r", encoding="utf-8") as handle:
                records.append(json.load(handle))
        if not records:
            raise HarnessError("%s has no host records" % source)
        with open(os.path.join(source, "run.json"), "r", encoding="utf-8") as handle:
            run = json.load(handle)
        with open(os.path.join(source, "fleet.json"), "r", encoding="utf-8") as handle:
            fleet = json.load(handle)
        names, verdicts = [], {}
        for index in range(nodes):
            record = copy.deepcopy(records[index % len(records)])
            name = "s%04d-%s" % (index + 1, stem_of(record["host"]))
            record["host"] = name
            names.append(name)
            verdicts[name] = {"verdict": record.get("verdict"), "failed": record.get("failed", []), "unreachable": record.get("unreachable"),
                              "profile": (record.get("profile") or {}).get("name"), "record": "hosts/%s.json" % name}
            with open(os.path.join(target, "hosts", name + ".json"), "w", encoding="utf-8") as handle:
                json.dump(record, handle, indent=1, sort_keys=True)
        run.update({"run_id": "synthetic-%d" % nodes, "hosts": names,
                    "inventory": ["SYNTHETIC: %d host records cloned from %s" % (nodes, os.path.relpath(source, REPO_ROOT))]})
        counts = dict.fromkeys(fleet.get("counts") or {}, 0)
        for entry in verdicts.values():
            counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1
        fleet.update({"run_id": run["run_id"], "nodes": nodes, "counts": counts, "node_verdicts": verdicts})
        with open(os.path.join(target, "run.json"), "w", encoding="utf-8") as handle:
            json.dump(run, handle, indent=1, sort_keys=True)
        with open(os.path.join(target, "fleet.json"), "w", encoding="utf-8") as handle:
            json.dump(fleet, handle, indent=1, sort_keys=True)
        return target

    def run_report(self):
        source = self.source_for_report()
        for nodes in self.args.report_nodes:
            self.report_one(source, nodes)

    def report_one(self, source, nodes):
        """One unmeasured render, then ``--repeats`` renders, of ``nodes`` host records cloned from ``source``.

        The first: on the virtual machines this runs on, memory a process frees is handed back to the host, and the
        first render after an idle minute paid for taking it back (10,000 nodes: 11.4 s, 6.2 s of it the kernel's,
        then 8.6 and 8.4 s with 2.6 and 2.2 s; 2026-12-07). Its figures are kept beside the row (``warmup``)."""
        target = self.synthetic_run(source, nodes)
        # the records on disk before the clock starts (0.5 GB at 10,000 nodes), not written back during the first render
        os.sync()
        self.log("report: rendering %d SYNTHETIC nodes (%s)" % (nodes, os.path.relpath(target, REPO_ROOT)))
        row = {"nodes": nodes, "failed": None, "runs": [], "source": os.path.relpath(source, REPO_ROOT)}
        self.report_rows.append(row)
        for repeat in range(self.args.repeats + 1):
            result = self.render_once(target, nodes, repeat)
            if result.get("failed"):
                row["failed"] = result["failed"]
                return
            if repeat == 0:
                row["warmup"] = result
                self.log("  report %d nodes, unmeasured first run: wall %.1f s  cpu %.1f s" % (
                    nodes, result["wall_s"], result["cpu_s"]))
                continue
            result["browser_load"] = self.browser_load(os.path.join(target, "report.html"))
            self.log("  report %d nodes run %d: wall %.1f s  cpu %.1f s  rss %.0f MiB  html %.2f MB" % (
                nodes, repeat, result["wall_s"], result["cpu_s"], result["maxrss_mib"], result["sizes"].get("report.html", 0) / 1e6))
            row["runs"].append(result)

    def render_once(self, target, nodes, repeat):
        """``render_report(target)`` in a process of its own, measured; ``failed`` says why it did not render."""
        code = ("import sys\n"
                "from gpufleet.report.render import render_report\n"
                "render_report(sys.argv[1])\n")
        env = dict(os.environ)
        env["PYTHONPATH"] = COLLECTIONS + os.pathsep + env.get("PYTHONPATH", "")
        log_path = os.path.join(self.out, "logs", "report-%d-%d.log" % (nodes, repeat))
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        load_before = _load()
        result = tgf.run_measured([sys.executable, "-c", code, target], env, log_path, self.args.timeout)
        result["load"] = [load_before, _load()]
        if result["rc"] != 0 or result["timed_out"]:
            with open(log_path, "r", encoding="utf-8", errors="replace") as handle:
                tail = (handle.read().strip().splitlines() or ["no output"])[-1]
            result["failed"] = "rc %s: %s" % (result["rc"], tail[:300])
            return result
        result["sizes"] = {name: os.path.getsize(os.path.join(target, name))
                           for name in ("report.html", "report.md", "results.json", "junit.xml") if os.path.exists(os.path.join(target, name))}
        return result

    def browser_load(self, page):
        """Seconds headless Chromium took to open ``page`` (browser_load.py), or why there is no figure."""
        try:
            return "%.1f" % (browser_load.load_ms(page, self.args.browser_timeout) / 1000.0)
        except browser_load.BrowserError as exc:
            self.log("  report: no browser figure: %s" % exc)
            return "over %.0f" % self.args.browser_timeout if isinstance(exc, browser_load.BrowserTimeout) else "-"

    # -- the bad-node search -------------------------------------------------------------------

    def run_search(self):
        sys.path.insert(0, COLLECTIONS)
        # pylint: disable-next=import-outside-toplevel
        from gpufleet.plan import pair_search
        self.log("search: k = 1..4 bad among N = %s, %d seeds each" % (",".join(map(str, self.args.search_sizes)), self.args.search_seeds))
        for size in self.args.search_sizes:
            for bad_count in range(1, 5):
                if bad_count >= size:
                    continue
                started = time.monotonic()
                row = self.search_cell(pair_search, size, bad_count, None)
                if row["missed"]:
                    # k >= N/2 can leave no good-good pair: only an absolute floor (the profile's) tells slow from normal
                    row["with_floor"] = self.search_cell(pair_search, size, bad_count, SEARCH_FLOOR)
                row["seconds"] = time.monotonic() - started
                self.search_rows.append(row)
                floor = row.get("with_floor")
                floor_text = "; with floor %g: worst %d, missed %d, false %d+%d" % (
                    SEARCH_FLOOR, floor["worst"], floor["missed"], floor["false_nodes"], floor["false_links"]) if floor else ""
                self.log("  N=%4d k=%d: rounds worst %d median %s, missed %d, false %d+%d%s (%.1f s)" % (
                    size, bad_count, row["worst"], row["median"], row["missed"], row["false_nodes"], row["false_links"], floor_text, row["seconds"]))
        for size in self.args.rr_sizes:
            if size < 3:
                continue
            seeds = min(self.args.search_seeds, 3)
            named_right, rounds, started = 0, [], time.monotonic()
            for seed in range(seeds):
                rng = random.Random("fleet_scale/rr/%d/%d" % (size, seed))
                link = tuple(sorted(rng.sample(range(size), 2)))
                verdict = pair_search.simulate(size, bad_links=[link], seed=seed, mode="round_robin")
                expected = [tuple(sorted(("node%02d" % link[0], "node%02d" % link[1])))]  # names compare as strings
                if [tuple(pair) for pair in verdict["bad_links"]] == expected and not verdict["bad_nodes"]:
                    named_right += 1
                rounds.append(verdict["rounds_used"])
            self.rr_rows.append({"n": size, "seeds": seeds, "named_right": named_right, "rounds": sorted(set(rounds)),
                                 "seconds": time.monotonic() - started})
            self.log("  round robin N=%4d: bad link named as that link in %d of %d, rounds %s (%.1f s)" % (
                size, named_right, seeds, sorted(set(rounds)), time.monotonic() - started))

    def search_cell(self, pair_search, size, bad_count, floor):
        """One (N, k) cell over ``--search-seeds`` seeded placements of the bad nodes."""
        rounds, missed, false_nodes, false_links = [], 0, 0, 0
        for seed in range(self.args.search_seeds):
            rng = random.Random("fleet_scale/%d/%d/%d" % (size, bad_count, seed))
            bad = sorted(rng.sample(range(size), bad_count))
            names = {"node%02d" % index for index in bad}
            verdict = pair_search.simulate(size, bad_nodes=bad, seed=seed, floor=floor)
            named = set(verdict["bad_nodes"])
            rounds.append(verdict["rounds_used"])
            missed += 1 if names - named else 0
            false_nodes += len(named - names)
            false_links += len(verdict["bad_links"])
        return {"n": size, "k": bad_count, "seeds": self.args.search_seeds, "worst": max(rounds), "median": _median(rounds), "missed": missed,
                "false_nodes": false_nodes, "false_links": false_links, "target": 2 * bad_count + 2, "floor": floor,
                "round_robin": size - 1 if size % 2 == 0 else size}

    # -- driving -------------------------------------------------------------------------------

    def run(self):
        os.makedirs(self.out, exist_ok=True)
        started = time.monotonic()
        sections = self.args.sections
        # the report first, on the machine as quiet as the harness finds it: after the fleet section's quarter hour of
        # 25 forks on 2 cores the same render of 10,000 nodes took 16.5 to 23.5 CPU-s
        if "report" in sections:
            self.run_report()
        if "fleet" in sections:
            self.run_local()
            self.run_ssh()
        if "search" in sections:
            self.run_search()
        self.total_s = time.monotonic() - started

    # -- the tables ----------------------------------------------------------------------------

    def fleet_table(self):
        lines = [
            "| fleet | hosts | what | wall s (median, min–max) | controller CPU s | peak RSS MiB | runs | ratio wall (CPU) ours/baseline |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for row in self.rows:
            if row["failed"]:
                lines.append("| %s | %d | FAILED: %s | | | | %d+%d ok | |" % (
                    row["fleet"], row["hosts"], row["failed"].replace("|", "\\|"), len(row["ours"]), len(row["baseline"])))
                continue
            medians = {}
            for kind, label in (("ours", "facts + checks + report"), ("baseline", "baseline: 5 trivial tasks")):
                runs = row[kind]
                walls = [run["wall_s"] for run in runs]
                medians[kind] = (_median(walls), _median([run["cpu_s"] for run in runs]))
                ratio = ""
                if kind == "ours":
                    ratio = "**%.2f** (%.2f)" % (medians["ours"][0] / row_baseline(row)[0], medians["ours"][1] / row_baseline(row)[1])
                lines.append("| %s | %d | %s | %.1f (%.1f–%.1f) | %.1f | %.0f | %d | %s |" % (
                    row["fleet"], row["hosts"], label, medians[kind][0], min(walls), max(walls), medians[kind][1],
                    _median([run["maxrss_mib"] for run in runs]), len(runs), ratio))
        return "\n".join(lines)

    def growth_lines(self):
        local = {row["hosts"]: row for row in self.rows if row["fleet"] == "local" and not row["failed"]}
        lines = []
        sizes = sorted(local)
        for small, large in zip(sizes, sizes[1:]):
            ours = _median([run["wall_s"] for run in local[large]["ours"]]) / _median([run["wall_s"] for run in local[small]["ours"]])
            base = row_baseline(local[large])[0] / row_baseline(local[small])[0]
            lines.append("- growth %d -> %d hosts (local, wall, x%.1f hosts): facts + checks + report **%.2fx**, baseline %.2fx" % (
                small, large, large / small, ours, base))
        return lines

    def report_table(self):
        lines = ["| nodes | wall s (median, min–max) | CPU s | peak RSS MiB | report.html MB | report.md MB "
                 "| results.json MB | junit.xml MB | report.html in Chromium, s | runs |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in self.report_rows:
            if row["failed"]:
                lines.append("| %d (SYNTHETIC) | FAILED: %s | | | | | | | | %d |" % (
                    row["nodes"], row["failed"].replace("|", "\\|"), len(row["runs"])))
                continue
            runs = row["runs"]
            walls = [run["wall_s"] for run in runs]
            sizes = runs[-1]["sizes"]
            lines.append("| %d (SYNTHETIC) | %.1f (%.1f–%.1f) | %.1f | %.0f | %s | %s | %s | %s | %s | %d |" % (
                row["nodes"], _median(walls), min(walls), max(walls), _median([run["cpu_s"] for run in runs]),
                _median([run["maxrss_mib"] for run in runs]),
                *["%.2f" % (sizes[name] / 1e6) if name in sizes else "-" for name in ("report.html", "report.md", "results.json", "junit.xml")],
                " / ".join(run.get("browser_load", "-") for run in runs), len(runs)))
        return "\n".join(lines)

    def search_table(self):
        lines = ["| N | k bad | seeds | rounds worst | rounds median | target 2k+2 | all bad named | false accusations (nodes+links) | round robin |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in self.search_rows:
            named = "%d of %d" % (row["seeds"] - row["missed"], row["seeds"])
            floor = row.get("with_floor")
            if floor:
                named += " (with a floor of %g: %d of %d, worst %d rounds, %d+%d false)" % (
                    floor["floor"], floor["seeds"] - floor["missed"], floor["seeds"], floor["worst"], floor["false_nodes"], floor["false_links"])
            lines.append("| %d | %d | %d | %d%s | %g | %d | %s | %d+%d | %d |" % (
                row["n"], row["k"], row["seeds"], row["worst"], "" if row["worst"] <= row["target"] else " **over**", row["median"],
                row["target"], named, row["false_nodes"], row["false_links"], row["round_robin"]))
        return "\n".join(lines)

    def rr_lines(self):
        return ["- round robin, one bad link among N = %d: named as that link (no node accused) in %d of %d placements, %s rounds" % (
            row["n"], row["named_right"], row["seeds"], "/".join(map(str, row["rounds"]))) for row in self.rr_rows]

    def machine(self):
        return tgf.Harness.machine(self)

    def report(self):
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        loads = ("load average (1 min) %.1f–%.1f during the fleet runs" % (min(self.loads), max(self.loads))) if self.loads else ""
        settings = "forks %s, strategy %s%s" % (self.args.forks or "from ansible.cfg", self.args.strategy or "from ansible.cfg",
                                                "; -e %s" % " ".join(self.args.extra_vars) if self.args.extra_vars else "")
        parts = ["Measured %s on %s; %d run(s) per configuration; %s; %s; harness total %.0f s. Command: `%s`." % (
            when, self.machine(), self.args.repeats, settings, loads or "no fleet runs", self.total_s, self.args.command_line), ""]
        if self.rows:
            parts += ["#### validate_cluster.yml (facts + checks + report) against the baseline", "", self.fleet_table(), ""]
            parts += self.growth_lines() + [""] if self.growth_lines() else []
            parts += ["- " + note for note in self.notes] + ([""] if self.notes else [])
        if self.report_rows:
            parts += ["#### The report alone, SYNTHETIC run of cloned host records (from %s)" % (
                self.report_rows[0].get("source") or "a real run"), "", self.report_table(), ""]
        if self.search_rows or self.rr_rows:
            parts += ["#### Bad-node search (pair_search.simulate, SYNTHETIC figures)", "", self.search_table(), ""] + self.rr_lines() + [""]
        return "\n".join(parts)

    def write_json(self):
        path = os.path.join(self.out, "fleet_scale.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"machine": self.machine(), "total_s": self.total_s, "args": vars(self.args), "rows": self.rows, "notes": self.notes,
                       "report": self.report_rows, "search": self.search_rows, "round_robin": self.rr_rows}, handle, indent=1, default=str)
        return path


def row_baseline(row):
    return (_median([run["wall_s"] for run in row["baseline"]]), _median([run["cpu_s"] for run in row["baseline"]]))


def update_doc(path, text):
    tgf.update_doc(path, text, DOC_BEGIN, DOC_END)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each (CI smoke): %s" % QUICK)
    parser.add_argument("--sections", default="fleet,report,search", help="any of fleet,report,search (default all)")
    parser.add_argument("--local-sizes", type=_sizes, help="replayed local fleet sizes (default %s)" % FULL["local_sizes"])
    parser.add_argument("--ssh-sizes", type=_sizes, help="SSH fleet sizes, root only (default %s; empty skips)" % FULL["ssh_sizes"])
    parser.add_argument("--repeats", type=int, help="runs per configuration (default %d; the median is reported)" % FULL["repeats"])
    parser.add_argument("--forks", type=int, help="ansible-playbook --forks (default: ansible.cfg's)")
    parser.add_argument("--strategy", help="e.g. mitogen_linear or free (default: ansible.cfg's)")
    parser.add_argument("--extra-vars", "-e", action="append", help="passed to both playbooks, e.g. gpufleet_fact_collector=separate")
    parser.add_argument("--ansible-env", action="append", metavar="NAME=VALUE", help="environment for ansible-playbook, e.g. ANSIBLE_PIPELINING=0")
    parser.add_argument("--report-nodes", type=_sizes, help="host records of each synthetic report run (default %s)" % FULL["report_nodes"])
    parser.add_argument("--browser-timeout", type=float, default=180.0,
                        help="seconds headless Chromium may take to open each report.html (default 180)")
    parser.add_argument("--search-sizes", type=_sizes, help="N of the bad-node search (default %s)" % FULL["search_sizes"])
    parser.add_argument("--rr-sizes", type=_sizes, help="N of the round-robin bad-link check (default %s)" % FULL["rr_sizes"])
    parser.add_argument("--search-seeds", type=int, help="placements per (N, k) (default %d)" % FULL["search_seeds"])
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one ansible-playbook run may take (default 1800)")
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "tests", "output", "fleet_scale"), help="logs, runs and fleet_scale.json")
    parser.add_argument("--update-doc", metavar="FILE", help="rewrite FILE's fleet-scale section (e.g. docs/performance.md)")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    for key in ("local_sizes", "ssh_sizes", "report_nodes", "search_sizes", "rr_sizes"):
        if getattr(args, key) is None:
            setattr(args, key, _sizes(defaults[key]))
    for key in ("repeats", "search_seeds"):
        if getattr(args, key) is None:
            setattr(args, key, defaults[key])
    args.sections = [part.strip() for part in args.sections.split(",") if part.strip()]
    unknown = sorted(set(args.sections) - {"fleet", "report", "search"})
    if unknown:
        parser.error("unknown section(s) %s" % ", ".join(unknown))
    if args.repeats < 1 or args.search_seeds < 1:
        parser.error("--repeats and --search-seeds must be at least 1")
    if "report" in args.sections and not args.report_nodes:
        parser.error("--report-nodes names no size for the report section")
    args.command_line = " ".join([".venv/bin/python", os.path.relpath(os.path.abspath(__file__), REPO_ROOT)] + list(argv if argv is not None else sys.argv[1:]))
    return args


def main(argv=None):
    args = parse_args(argv)
    return tgf.run_harness("fleet_scale", Harness(args), args.update_doc, (DOC_BEGIN, DOC_END),
                           lambda harness: any(row["failed"] for row in harness.rows + harness.report_rows))


if __name__ == "__main__":
    sys.exit(main())

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Timing harness: how long does ``playbooks/gather_facts.yml`` take, and what does it cost the controller?

One command (``make timing`` runs it; root for the SSH fleet)::

    .venv/bin/python benchmarks/time_gather_facts.py [--repeats 3] [--forks 8] \\
        [--local-hosts 64] [--ssh-hosts 8] [--update-doc docs/performance.md]

Configurations, each run ``--repeats`` times (default 3), median reported:

* ``local``: the replayed fleet, ``--local-hosts`` hosts (default 64) cycling over the node
  files of ``inventories/simulated/nodes/`` (wrappers built by tests/replay/build_fleet.py
  ``--inventory``), ``ansible_connection: local``, explicit ``ansible_python_interpreter``.
* ``ssh``: ``--ssh-hosts`` hosts (default 8) brought up by ``tests/sshfleet/fleet.sh up`` (a
  network namespace and an sshd each, replayed nodes), its ``inventory.yml``; torn down in
  ``finally``. Every run starts cold: the ssh ControlPersist masters of the previous run are
  closed first.

each with stock settings (``linear`` strategy) and with Mitogen (``mitogen_linear``, from the
``mitogen`` package in this interpreter's environment). Forks: ``--forks`` (default 8).

Measured per run: wall time; controller CPU-seconds = user+sys of ansible-playbook and every
descendant it reaped (``os.wait4`` of the child: forks, ssh clients, and with
``ansible_connection: local`` also the modules themselves, which run on this machine); peak RSS
= the largest single process among them (``ru_maxrss``), not a sum. On the SSH fleet the
module side runs under the hosts' sshd and is not counted; neither are ssh ControlPersist
masters (they detach).

A run counts only when ansible-playbook exits 0 and its recap lists every host with
``failed=0 unreachable=0``; otherwise the table says FAILED with the reason, never a number.
Under Mitogen the harness also records whether our action plugins work (the per-host summary
lines of gather_facts.yml must equal the stock run's) and whether an async task
(``async: 30, poll: 2``, benchmarks/async_probe.yml) completes.

Logs of every run: ``--out`` (default tests/output/timing). ``--update-doc FILE`` rewrites the
part of FILE between ``<!-- timing:begin -->`` and ``<!-- timing:end -->`` with the results.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import glob
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, ".."))
PLAYBOOK = os.path.join(REPO_ROOT, "playbooks", "gather_facts.yml")
ASYNC_PROBE = os.path.join(HERE, "async_probe.yml")
SIM_INVENTORY = os.path.join(REPO_ROOT, "inventories", "simulated", "hosts.yml")
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
BUILD_FLEET = os.path.join(REPO_ROOT, "tests", "replay", "build_fleet.py")
FLEET_SH = os.path.join(REPO_ROOT, "tests", "sshfleet", "fleet.sh")
DOC_BEGIN = "<!-- timing:begin -->"
DOC_END = "<!-- timing:end -->"
RECAP_RE = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)")
SUMMARY_RE = re.compile(r'^\s+"msg": "(.*)"$')


class HarnessError(Exception):
    """A fleet that could not be prepared."""


# ---------------------------------------------------------------------------------------------
# running one ansible-playbook and measuring it
# ---------------------------------------------------------------------------------------------

def _set_subreaper(on):
    """Make this process the reaper of orphaned descendants (Linux PR_SET_CHILD_SUBREAPER).

    Processes a run leaves behind (Mitogen contexts, ssh ControlPersist masters) then become
    this process's children, so their CPU time is counted when they are reaped. Returns
    whether it worked (False off Linux: orphans are then not counted).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1 if on else 0, 0, 0, 0) == 0  # 36: PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _my_children():
    mine = []
    me = os.getpid()
    for stat_file in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat_file, "r", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            mine.append(int(stat_file.split("/")[2]))
    return mine


def _reap_all(grace):
    """Reap every child (orphans adopted as subreaper included); SIGKILL what outlives ``grace``."""
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        if time.monotonic() > deadline:
            for child in _my_children():
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
        time.sleep(0.05)


def run_measured(argv, env, log_path, timeout, cleanup=None):
    """Run ``argv`` (stdout+stderr to ``log_path``); return wall, CPU, peak RSS and exit code.

    Wall: until ansible-playbook exits. CPU: user+sys of every process of the run, from the
    RUSAGE_CHILDREN delta once all of them are reaped (the harness is their subreaper, so
    orphans count too; ``cleanup`` runs first, e.g. to close ssh masters). Peak RSS: the
    ``os.wait4`` rusage of ansible-playbook (the largest single process among it and what it
    reaped; RUSAGE_CHILDREN's ru_maxrss would carry over between runs).
    """
    _reap_all(5)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subreaper = _set_subreaper(True)
    try:
        with open(log_path, "wb") as log:
            start = time.monotonic()
            # pylint: disable-next=consider-using-with  # reaped by os.wait4 below, not by Popen
            proc = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            timed_out = threading.Event()

            def kill():
                timed_out.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _pid, status, usage = os.wait4(proc.pid, 0)
            except BaseException:
                # interrupted (Ctrl-C, SIGTERM): nothing of the run outlives the harness
                kill()
                os.waitpid(proc.pid, 0)
                if cleanup:
                    cleanup()
                _reap_all(2)
                raise
            finally:
                timer.cancel()
            wall = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
        if cleanup:
            cleanup()
        _reap_all(10)
    finally:
        _set_subreaper(False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    system = after.ru_stime - before.ru_stime
    return {
        "rc": proc.returncode,
        "timed_out": timed_out.is_set(),
        "wall_s": wall,
        "cpu_s": user + system,
        "user_s": user,
        "sys_s": system,
        "playbook_tree_cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_mib": usage.ru_maxrss / 1024.0,
        "orphans_counted": subreaper,
    }


def parse_output(text):
    """``(recap, summaries)``: ``{host: counters}`` of the PLAY RECAP, sorted summary lines."""
    recap = {}
    in_recap = False
    summaries = []
    for line in text.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        match = RECAP_RE.match(line)
        if in_recap and match:
            keys = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
            recap[match.group(1)] = dict(zip(keys, (int(value) for value in match.groups()[1:])))
            continue
        match = SUMMARY_RE.match(line)
        if match:
            summaries.append(match.group(1))
    return recap, sorted(summaries)


def failure_reason(result, text, hosts):
    """Why a run does not count, or None when it does."""
    if result["timed_out"]:
        return "timed out"
    recap, _summaries = parse_output(text)
    if result["rc"] != 0:
        lines = [line.strip() for line in text.splitlines() if re.search(r"ERROR|FAILED|fatal|Traceback|Error", line)]
        detail = lines[-1] if lines else (text.strip().splitlines() or ["no output"])[-1]
        return "rc %d: %s" % (result["rc"], detail[:300])
    missing = sorted(set(hosts) - set(recap))
    if missing:
        return "%d of %d hosts missing from the recap (e.g. %s)" % (len(missing), len(hosts), missing[0])
    bad = sorted(host for host, counts in recap.items() if counts["failed"] or counts["unreachable"])
    if bad:
        return "%d hosts failed or unreachable (e.g. %s)" % (len(bad), bad[0])
    return None


# ---------------------------------------------------------------------------------------------
# environments: stock and Mitogen
# ---------------------------------------------------------------------------------------------

def mitogen_info():
    """``(version, strategy plugin dir)`` of the installed Mitogen, or ``(None, reason)``."""
    try:
        import ansible_mitogen  # pylint: disable=import-outside-toplevel
        import mitogen  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        return None, "mitogen is not installed in %s (%s): pip install mitogen" % (sys.prefix, exc)
    plugins = os.path.join(os.path.dirname(ansible_mitogen.__file__), "plugins", "strategy")
    return ".".join(str(part) for part in mitogen.__version__), plugins


def ansible_env(strategy_dir=None):
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update({
        "ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    })
    if strategy_dir:
        env["ANSIBLE_STRATEGY_PLUGINS"] = strategy_dir
        env["ANSIBLE_STRATEGY"] = "mitogen_linear"
    return env


def ansible_playbook():
    path = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return path if os.path.exists(path) else shutil.which("ansible-playbook") or "ansible-playbook"


# ---------------------------------------------------------------------------------------------
# fleets
# ---------------------------------------------------------------------------------------------

def build_local_fleet(out_dir, hosts, python):
    """Write ``out_dir/hosts.yml`` (``hosts`` hosts cycling over the simulated node files) and
    build their replay wrappers with build_fleet.py --inventory; return the host names."""
    node_files = sorted(glob.glob(os.path.join(SIM_NODES, "*.yml")))
    if not node_files:
        raise HarnessError("no node files in %s" % SIM_NODES)
    with open(SIM_INVENTORY, "r", encoding="utf-8") as handle:
        sim_vars = dict((yaml.safe_load(handle) or {}).get("all", {}).get("vars") or {})
    nodes_dir = os.path.join(out_dir, "nodes")
    sim_vars.update({
        "ansible_connection": "local",
        "ansible_python_interpreter": python,
        "gpufleet_become": False,
        "gpufleet_sim_dir": nodes_dir + "/{{ inventory_hostname }}",
    })
    inventory_hosts = {}
    for index in range(hosts):
        node_file = node_files[index % len(node_files)]
        stem = os.path.splitext(os.path.basename(node_file))[0]
        host_vars = {}
        claim_file = os.path.join(os.path.dirname(SIM_INVENTORY), "host_vars", stem + ".yml")
        if os.path.isfile(claim_file):
            with open(claim_file, "r", encoding="utf-8") as handle:
                host_vars.update(yaml.safe_load(handle) or {})
        host_vars["gpufleet_sim_node"] = node_file
        inventory_hosts["t%02d-%s" % (index + 1, stem)] = host_vars
    inventory = {"all": {"vars": sim_vars, "children": {"timing": {"hosts": inventory_hosts}}}}
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "hosts.yml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("---\n# Written by benchmarks/time_gather_facts.py: %d replayed hosts over %s\n" % (hosts, SIM_NODES))
        yaml.safe_dump(inventory, handle, sort_keys=False, width=1000)
    proc = subprocess.run([sys.executable, BUILD_FLEET, "--inventory", path, "--out", nodes_dir],
                          capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise HarnessError("build_fleet.py failed: %s" % proc.stderr.strip())
    return path, sorted(inventory_hosts)


def node_python():
    """The interpreter the local hosts run modules with: this (the controller's) Python."""
    return sys.executable


def close_ssh_masters(state):
    for sock in glob.glob(os.path.join(state, "cp", "*")):
        subprocess.run(["ssh", "-o", "ControlPath=" + sock, "-O", "exit", "fleet"],
                       capture_output=True, check=False, timeout=30)


def ssh_fleet_hosts(state):
    with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
        inventory = yaml.safe_load(handle)
    return sorted(inventory["all"]["children"]["sshfleet"]["hosts"])


# ---------------------------------------------------------------------------------------------
# the harness
# ---------------------------------------------------------------------------------------------

class Harness:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.rows = []
        self.notes = []
        self.mitogen_version, self.mitogen_dir = mitogen_info()
        self.total_s = 0.0

    def log(self, message):
        print(message, flush=True)

    def configs(self):
        configs = [("stock", None)]
        if self.args.no_mitogen:
            return configs
        configs.append(("mitogen", self.mitogen_dir if self.mitogen_version else None))
        return configs

    def time_fleet(self, fleet, inventory, hosts, cleanup=None):
        """Time gather_facts.yml on one fleet in every configuration; append table rows."""
        summaries = {}
        for name, strategy_dir in self.configs():
            row = {"fleet": fleet, "config": name, "hosts": len(hosts), "forks": self.args.forks, "runs": []}
            self.rows.append(row)
            if name == "mitogen" and not self.mitogen_version:
                row["failed"] = self.mitogen_dir
                continue
            env = ansible_env(strategy_dir)
            for repeat in range(1, self.args.repeats + 1):
                if cleanup:
                    cleanup()
                log_path = os.path.join(self.out, "%s-%s-%d.log" % (fleet, name, repeat))
                argv = [ansible_playbook(), "-i", inventory, "--forks", str(self.args.forks), PLAYBOOK]
                result = run_measured(argv, env, log_path, self.args.timeout, cleanup)
                with open(log_path, "r", encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
                reason = failure_reason(result, text, hosts)
                self.log("  %-5s %-7s run %d: wall %.1f s, cpu %.1f s, maxrss %.0f MiB%s" % (
                    fleet, name, repeat, result["wall_s"], result["cpu_s"], result["maxrss_mib"],
                    "  FAILED: " + reason if reason else ""))
                if reason:
                    row["failed"] = "%s (log %s)" % (reason, os.path.relpath(log_path, REPO_ROOT))
                    break
                row["runs"].append(result)
                summaries.setdefault(name, parse_output(text)[1])
        if "stock" in summaries and "mitogen" in summaries:
            same = summaries["stock"] == summaries["mitogen"]
            differing = sum(1 for left, right in zip(summaries["stock"], summaries["mitogen"]) if left != right)
            self.notes.append("%s fleet: per-host fact summaries under Mitogen %s the stock run's (%d hosts%s)" % (
                fleet, "equal" if same else "DIFFER from", len(summaries["stock"]),
                "" if same else ", %d lines differ" % differing))

    def async_probe(self, fleet, inventory, hosts, cleanup=None):
        """Run benchmarks/async_probe.yml under each configuration; note the outcome."""
        for name, strategy_dir in self.configs():
            if name == "mitogen" and not self.mitogen_version:
                continue
            if cleanup:
                cleanup()
            log_path = os.path.join(self.out, "%s-%s-async.log" % (fleet, name))
            argv = [ansible_playbook(), "-i", inventory, "--forks", str(self.args.forks), ASYNC_PROBE]
            result = run_measured(argv, ansible_env(strategy_dir), log_path, self.args.timeout, cleanup)
            with open(log_path, "r", encoding="utf-8", errors="replace") as handle:
                reason = failure_reason(result, handle.read(), hosts)
            outcome = "works" if reason is None else "FAILED: %s (log %s)" % (reason, os.path.relpath(log_path, REPO_ROOT))
            note = "%s fleet, %s: async task (async: 30, poll: 2) on %d hosts %s, wall %.1f s" % (
                fleet, name, len(hosts), outcome, result["wall_s"])
            self.log("  " + note)
            self.notes.append(note)

    def run_local(self):
        self.log("local: building %d replayed hosts" % self.args.local_hosts)
        inventory, hosts = build_local_fleet(os.path.join(self.out, "local"), self.args.local_hosts, node_python())
        self.time_fleet("local", inventory, hosts)
        probe_hosts = hosts[:2]
        probe_inventory = os.path.join(self.out, "local", "probe.yml")
        with open(probe_inventory, "w", encoding="utf-8") as handle:
            yaml.safe_dump({"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": node_python()},
                                    "hosts": {host: None for host in probe_hosts}}}, handle)
        self.async_probe("local", probe_inventory, probe_hosts)

    def run_ssh(self):
        if os.geteuid() != 0:
            reason = "needs root (network namespaces, sshd): skipped"
            for name, _dir in self.configs():
                self.rows.append({"fleet": "ssh", "config": name, "hosts": self.args.ssh_hosts,
                                  "forks": self.args.forks, "runs": [], "failed": reason})
            return
        state = os.path.join(self.out, "sshfleet")
        if os.path.exists(os.path.join(state, "fleet_id")):
            subprocess.run(["bash", FLEET_SH, "down", "--state", state], check=False, timeout=120)
        self.log("ssh: bringing up %d hosts" % self.args.ssh_hosts)
        try:
            up = subprocess.run(["bash", FLEET_SH, "up", "--hosts", str(self.args.ssh_hosts), "--state", state],
                                capture_output=True, text=True, check=False, timeout=300)
            if up.returncode != 0:
                reason = "fleet.sh up failed: %s" % (up.stderr.strip().splitlines() or ["rc %d" % up.returncode])[-1]
                for name, _dir in self.configs():
                    self.rows.append({"fleet": "ssh", "config": name, "hosts": self.args.ssh_hosts,
                                      "forks": self.args.forks, "runs": [], "failed": reason})
                return
            inventory = os.path.join(state, "inventory.yml")
            hosts = ssh_fleet_hosts(state)
            self.time_fleet("ssh", inventory, hosts, cleanup=lambda: close_ssh_masters(state))
            self.async_probe("ssh", inventory, hosts, cleanup=lambda: close_ssh_masters(state))
        finally:
            subprocess.run(["bash", FLEET_SH, "down", "--state", state], capture_output=True, check=False, timeout=120)

    def run(self):
        os.makedirs(self.out, exist_ok=True)
        started = time.monotonic()
        if not self.args.skip_local:
            self.run_local()
        if not self.args.skip_ssh:
            self.run_ssh()
        self.total_s = time.monotonic() - started

    # -----------------------------------------------------------------------------------------

    def table(self):
        lines = [
            "| fleet | hosts | forks | strategy | wall s (median) | wall s (min–max) | controller CPU s (median) | peak RSS MiB (median) | runs |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|",
        ]
        for row in self.rows:
            strategy = "linear (stock)" if row["config"] == "stock" else "mitogen_linear"
            runs = row["runs"]
            if row.get("failed"):
                lines.append("| %s | %d | %d | %s | FAILED: %s | | | | %d ok |" % (
                    row["fleet"], row["hosts"], row["forks"], strategy, row["failed"].replace("|", "\\|"), len(runs)))
                continue
            walls = [run["wall_s"] for run in runs]
            lines.append("| %s | %d | %d | %s | %.1f | %.1f–%.1f | %.1f | %.0f | %d |" % (
                row["fleet"], row["hosts"], row["forks"], strategy, statistics.median(walls), min(walls), max(walls),
                statistics.median(run["cpu_s"] for run in runs),
                statistics.median(run["maxrss_mib"] for run in runs), len(runs)))
        return "\n".join(lines)

    def machine(self):
        model = ""
        try:
            with open("/proc/cpuinfo", "r", encoding="utf-8") as handle:
                model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
        except OSError:
            pass
        import ansible  # pylint: disable=import-outside-toplevel
        return "%d CPU cores (%s), Python %s, ansible-core %s, Mitogen %s" % (
            os.cpu_count() or 0, model or platform.machine(), platform.python_version(),
            ansible.__version__ if hasattr(ansible, "__version__") else "?", self.mitogen_version or "not installed")

    def report(self):
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        parts = [
            "Measured %s on %s; %d runs per configuration, --forks %d; harness total %.0f s." % (
                when, self.machine(), self.args.repeats, self.args.forks, self.total_s),
            "",
            self.table(),
            "",
        ]
        parts += ["- " + note for note in self.notes]
        return "\n".join(parts) + "\n"

    def write_json(self):
        path = os.path.join(self.out, "timing.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"machine": self.machine(), "total_s": self.total_s, "repeats": self.args.repeats, "forks": self.args.forks,
                       "rows": self.rows, "notes": self.notes}, handle, indent=2)
        return path


def update_doc(path, text, begin=DOC_BEGIN, end=DOC_END):
    """Replace what stands between the ``begin`` and ``end`` markers of ``path`` with ``text``."""
    with open(path, "r", encoding="utf-8") as handle:
        doc = handle.read()
    if begin not in doc or end not in doc:
        raise HarnessError("%s has no %s ... %s markers" % (path, begin, end))
    head, rest = doc.split(begin, 1)
    _old, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(head + begin + "\n" + text + end + tail)


def run_harness(name, harness, doc_path, doc_markers, failed):
    """The end of both harnesses' command lines: run, print the tables, write the JSON and (``doc_path``)
    the doc section between ``doc_markers``; the exit code (1 when the run stopped or ``failed(harness)``).
    SIGTERM ends the run as an exit, so that no ansible-playbook of it outlives the harness."""

    def terminate(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    try:
        harness.run()
    except (HarnessError, OSError, subprocess.SubprocessError) as exc:
        sys.stderr.write("%s: %s\n" % (name, exc))
        return 1
    text = harness.report()
    print()
    print(text)
    print("details: %s" % harness.write_json())
    if doc_path:
        update_doc(doc_path, text, *doc_markers)
        print("updated %s" % doc_path)
    return 1 if failed(harness) else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration (default 3; the median is reported)")
    parser.add_argument("--forks", type=int, default=8, help="ansible-playbook --forks (default 8)")
    parser.add_argument("--local-hosts", type=int, default=64, help="hosts of the replayed local fleet (default 64)")
    parser.add_argument("--ssh-hosts", type=int, default=8, help="hosts of the SSH fleet (default 8)")
    parser.add_argument("--skip-local", action="store_true", help="do not time the local fleet")
    parser.add_argument("--skip-ssh", action="store_true", help="do not time the SSH fleet")
    parser.add_argument("--no-mitogen", action="store_true", help="stock settings only")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one ansible-playbook run may take (default 300)")
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "tests", "output", "timing"), help="logs and timing.json")
    parser.add_argument("--update-doc", metavar="FILE", help="rewrite FILE's timing section (e.g. docs/performance.md)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.forks < 1 or args.local_hosts < 1 or args.ssh_hosts < 1:
        parser.error("--repeats, --forks and the host counts must be at least 1")
    return run_harness("time_gather_facts", Harness(args), args.update_doc, (DOC_BEGIN, DOC_END),
                       lambda harness: any(row.get("failed") for row in harness.rows))


if __name__ == "__main__":
    sys.exit(main())

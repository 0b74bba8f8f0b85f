# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet validate``: run ``playbooks/validate_cluster.yml`` through ansible-runner.

Progress per phase goes to stderr (the phase is the task name's prefix: Preflight, Facts, Results,
Verdict, Report; ``hosts done/total``), the summary table and the report's path to stdout (with
``--output json`` or ``--query``: the run as results.json holds it, or what the JMESPath expression
selects from that, alone on stdout, the other lines on stderr). Exit 0 when every
node is accepted (ACCEPT or ACCEPT WITH WARNINGS), 2 when any is rejected or unreachable, 1 when the
run itself failed (playbook error, bad inventory, invalid profile or claim: nothing was judged) or the
query cannot be used (a bad expression is refused before anything runs).

``--retest-failed PREVIOUS`` runs only the nodes REJECTed or UNREACHABLE in the results directory
PREVIOUS and writes ``retest.json`` (cli_commands/retest.py) into the new results directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import yaml

from gpufleet import collection
from gpufleet.cli import retest
from gpufleet.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    JsonOutput,
    add_output_arguments,
    exit_code_for,
    fleet_line,
    json_output,
    load_run,
    node_verdicts,
    print_json,
    render_report,
    results_json,
    say,
    summary_table,
    terminal_text,
)
from gpufleet.results.store import FLEET_FILE, RUN_FILE, ResultsError, default_run_id

PLAYBOOK = "validate_cluster.yml"
PHASES = ("Preflight", "Facts", "Results", "Verdict", "Report")
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")


def playbook_path():
    """The validation playbook of the collection this code belongs to."""
    return collection.playbook(PLAYBOOK)


def run_once_tasks(path):
    """Names of the playbook's ``run_once`` tasks: their one result stands for every host."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            plays = yaml.safe_load(handle) or []
    except (OSError, yaml.YAMLError):
        return set()
    names = set()
    for play in plays if isinstance(plays, list) else []:
        for task in (play or {}).get("tasks") or []:
            if isinstance(task, dict) and task.get("run_once") and task.get("name"):
                names.add(str(task["name"]))
    return names


class Progress:
    """An ansible-runner event handler: per phase, how many hosts are done, on stderr.

    Ansible's linear strategy runs a task on every host before the next, so a phase advances task
    by task: a line ``<Phase> <done>/<total> hosts done: <task>`` is written when the task has a
    result (ok, failed, skipped, unreachable) for every host still in the play, and on fleets of
    20 hosts or more also at each tenth on the way. A ``run_once`` task's single result counts for
    every host; a host that failed a task without ``ignore_errors`` has left the play and counts as
    done from then on. The total is the play's host list, read from run.json once the preflight has
    written it (the lines of the first preflight task are therefore not shown). ``run_once`` tasks
    are known from the playbook, or, inside roles, by their single result (see ``_end_task``).
    """

    def __init__(self, results_dir, once=(), write=say, command="validate"):
        self.results_dir = results_dir
        self.command = command
        self.once = set(once)
        self.write = write
        self.hosts = None
        self.phase = None
        self.task = None
        self.done = set()
        self.dropped = set()
        self.shown = None
        self.failures = []

    def _load_hosts(self):
        try:
            hosts = load_run(self.results_dir)[0].get("hosts")
        except ResultsError:
            return
        if isinstance(hosts, list):
            self.hosts = [str(host) for host in hosts]

    def _show(self, force=False):
        if self.phase is None or self.hosts is None or self.task is None:
            return
        total = len(self.hosts)
        done = len((self.done | self.dropped) & set(self.hosts))
        step = max(total // 10, 1) if total >= 20 else total
        if done == self.shown or (not force and done < total and (done == 0 or done % step)):
            return
        self.shown = done
        self.write("gpufleet %s: %s %d/%d hosts done: %s" % (self.command, self.phase, done, total, terminal_text(self.task.split("|", 1)[-1].strip(), 80)))

    def _end_task(self):
        """A task is over: a single result on a fleet of several hosts was a ``run_once`` task (the
        linear strategy gives every host in the play a result, skipped or not), which counts for all;
        else a count the throttle held back is shown as it stands."""
        if self.task is None or self.hosts is None or not self.done:
            return
        if len(self.done) == 1 and len(self.hosts) > 1:
            self.done = set(self.hosts)
        if self.shown != len((self.done | self.dropped) & set(self.hosts)):
            self._show(force=True)

    def __call__(self, event):
        kind = event.get("event")
        data = event.get("event_data") or {}
        task = str(data.get("task") or "")
        if kind in ("playbook_on_task_start", "playbook_on_stats"):
            self._end_task()
        if kind == "playbook_on_task_start":
            prefix = task.split("|", 1)[0].strip() if "|" in task else None
            # phases only move forward: a role run late in the play may name its own checks "Preflight | ..."
            if prefix in PHASES and (self.phase is None or PHASES.index(prefix) > PHASES.index(self.phase)):
                self.phase = prefix
            self.task = task
            self.done = set()
            self.shown = None
        elif kind in RESULT_EVENTS:
            host = str(data.get("host") or "")
            if self.hosts is None and task.startswith("Preflight") and kind == "runner_on_ok":
                self._load_hosts()
            if task in self.once:
                self.done = set(self.hosts or [host])
            else:
                self.done.add(host)
            if kind == "runner_on_failed" and not data.get("ignore_errors"):
                self.dropped.add(host)
                res = data.get("res") or {}
                self.failures.append("%s: %s: %s" % (terminal_text(host), task, terminal_text(res.get("msg") or "failed", 2000)))
            self._show()
        return True


def _inventories(values):
    """Absolute inventory sources; an error message for one that does not exist."""
    sources = []
    for value in values:
        if "," in value:  # an inline host list, as ansible-playbook -i host1,host2,
            sources.append(value)
            continue
        path = os.path.abspath(os.path.expanduser(value))
        if not os.path.exists(path):
            return None, "inventory %s: no such file or directory" % value
        sources.append(path)
    return sources, None


def runner_env():
    """Environment for ansible-playbook: this collection first on the collections path, the
    interpreter's own ansible-playbook first on PATH, an unparsable inventory fatal."""
    env = {}
    collections = [collection.collections_path()] + [part for part in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if part]
    env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(collections)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_RETRY_FILES_ENABLED"] = "False"
    env["ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED"] = os.environ.get("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "True")
    # ansible-playbook runs in runner's private directory: keep the ansible.cfg of where the user stands
    if "ANSIBLE_CONFIG" not in os.environ and os.path.isfile("ansible.cfg"):
        env["ANSIBLE_CONFIG"] = os.path.abspath("ansible.cfg")
    return env


def _error_lines(runner):
    """What Ansible said went wrong, from the run's captured output."""
    try:
        text = runner.stdout.read()
    except (AttributeError, OSError, ValueError):
        return []
    wanted = [line for line in text.splitlines() if "ERROR" in line or "fatal:" in line or "FAILED!" in line or "[WARNING]: Unable to parse" in line]
    return [terminal_text(line, 2000) for line in wanted[-20:]]


def run_playbook(inventories, results_dir, limit=None, profile=None, forks=None, progress=None):
    """Run the validation playbook; returns ``(rc, status, errors, private_dir)``.

    ``private_dir`` is runner's directory (its artifacts hold the full Ansible output); the caller
    removes it when the run went well.
    """
    # ansible-runner is a dependency of the gpufleet CLI, not of the collection's plugins: imported only here
    import ansible_runner  # pylint: disable=import-outside-toplevel

    private_dir = tempfile.mkdtemp(prefix="gpufleet-runner-")
    extravars = {"gpufleet_results_dir": results_dir}
    if profile:
        extravars["gpufleet_profile"] = profile
    kwargs = {
        "private_data_dir": private_dir,
        "playbook": playbook_path(),
        "inventory": inventories,
        "extravars": extravars,
        "envvars": runner_env(),
        "quiet": True,
        "suppress_env_files": True,
        "event_handler": progress,
    }
    if limit:
        kwargs["limit"] = limit
    if forks:
        kwargs["forks"] = forks
    runner = ansible_runner.run(**kwargs)
    errors = _error_lines(runner) if runner.rc != 0 else []
    return runner.rc, runner.status, errors, private_dir


def current_report(results_dir):
    """The report.html the playbook's report role rendered for this run's verdicts, or None (missing or older than fleet.json)."""
    html = os.path.join(results_dir, "report.html")
    try:
        return html if os.stat(html).st_mtime >= os.stat(os.path.join(results_dir, FLEET_FILE)).st_mtime else None
    except OSError:
        return None


def report_and_summary(results_dir, verdicts, hosts, extra_lines=(), rerender=False, output: JsonOutput | None = None,
                       document: dict | None = None, command: str = "validate") -> int:
    """Render the report (unless the playbook already did and nothing was added since), print the
    summary table, the fleet line and where the report is.

    When ``output`` wants JSON, ``document`` (what ``--query`` selects from it) is all of stdout and
    the other lines go to stderr. EXIT_FAILED when the query fails on the document, else EXIT_OK."""
    report, why = (current_report(results_dir), None) if not rerender else (None, None)
    if not report:
        report, why = render_report(results_dir)
    lines = [fleet_line(verdicts), *extra_lines, "results: %s" % results_dir,
             "report: %s" % report if report else "report: not rendered: %s" % why]
    if output is not None and output.wanted:
        if print_json(output, document, command) != EXIT_OK:
            return EXIT_FAILED
        for line in lines:
            say(line)  # stdout holds the JSON alone, for a pipe
        return EXIT_OK
    sys.stdout.write(summary_table(verdicts, hosts) + "\n\n" + "".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return EXIT_OK


def validate(inventory, limit=None, profile=None, out=None, retest_failed=None, forks=None, command="validate",
             output: JsonOutput | None = None):
    """The whole of ``gpufleet validate``; returns the exit code. ``output``: the ``--output``/``--query``
    asked for (the table when None)."""
    inventories, problem = _inventories(inventory)
    if problem:
        say("gpufleet %s: %s" % (command, problem))
        return EXIT_FAILED
    results_dir = os.path.abspath(out or os.path.join("results", default_run_id()))
    retested = None
    if retest_failed:
        previous = os.path.abspath(retest_failed)
        if previous == results_dir:
            say("gpufleet %s: --out must be a new directory, not the previous run %s" % (command, previous))
            return EXIT_FAILED
        try:
            retested = retest.failed_nodes(previous)
        except ResultsError as exc:
            say("gpufleet %s: --retest-failed: %s" % (command, exc))
            return EXIT_FAILED
        if not retested:
            say("gpufleet %s: nothing to retest: every node of %s was accepted" % (command, previous))
            return EXIT_OK
        say("gpufleet %s: retesting %d node(s) that failed in %s: %s" % (command, len(retested), previous, ", ".join(terminal_text(h) for h in retested)))
        limit = ",".join(retested) + (",&" + limit if limit else "")
    if os.path.exists(os.path.join(results_dir, RUN_FILE)):
        say("gpufleet %s: %s holds an earlier run: resuming it (hosts already gathered are not gathered again)" % (command, results_dir))
    progress = Progress(results_dir, once=run_once_tasks(playbook_path()), command=command)
    rc, status, errors, private_dir = run_playbook(inventories, results_dir, limit=limit, profile=profile, forks=forks, progress=progress)
    finished = False
    try:
        run, fleet, hosts = load_run(results_dir)
        finished = fleet is not None and run.get("status") == "finished"
    except ResultsError:
        run = fleet = hosts = None
    if rc != 0 or not finished:
        say("gpufleet %s: the run failed (ansible-playbook %s, exit %s); nothing was judged" % (command, status, rc))
        for line in progress.failures or errors:
            say("  " + line)
        if run is None and rc == 0:
            say("  no results were written: no host of the inventory matched%s" % (" --limit %s" % limit if limit else ""))
        say("  full Ansible output: %s" % os.path.join(private_dir, "artifacts"))
        return EXIT_FAILED
    shutil.rmtree(private_dir, ignore_errors=True)
    verdicts = node_verdicts(run, fleet, hosts)
    extra = []
    if retested is not None:
        path, document = retest.write_retest(previous, results_dir, retested)
        extra = retest.retest_lines(document) + ["retest diff: %s" % path]
    run_document = results_json(run, fleet, hosts) if output is not None and output.wanted else None
    # retest.json is written after the playbook rendered its report: render it again to show the diff
    shown = report_and_summary(results_dir, verdicts, hosts, extra, rerender=retested is not None,
                               output=output, document=run_document, command=command)
    if shown != EXIT_OK:
        return EXIT_FAILED
    return exit_code_for(verdicts)


def cmd_validate(args):
    output = json_output(args, "validate")
    if output is None:
        return EXIT_FAILED
    return validate(args.inventory, limit=args.limit, profile=args.profile, out=args.out,
                    retest_failed=args.retest_failed, forks=args.forks, output=output)


def add_parser(commands):
    """``gpufleet validate``."""
    parser = commands.add_parser(
        "validate",
        help="run the acceptance playbook on an inventory and print the verdicts",
        description="Run playbooks/validate_cluster.yml (facts -> checks -> verdicts) through ansible-runner. Progress per phase on "
                    "stderr; the summary table and the report's path on stdout. Exit 0: every node accepted (with or without warnings); "
                    "2: some node rejected or unreachable; 1: the run itself failed (playbook error, bad inventory, invalid claim or profile).",
    )
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="INVENTORY",
                        help="inventory file or directory (repeatable), or a comma-separated host list")
    parser.add_argument("--limit", metavar="HOSTS", help="only these hosts (an Ansible host pattern)")
    parser.add_argument("--profile", metavar="NAME", help="judge every node against this threshold profile (gpufleet/profiles/NAME.yml)")
    parser.add_argument("--out", metavar="DIR", help="results directory (default: results/<UTC timestamp>); an existing one is resumed")
    parser.add_argument("--retest-failed", metavar="PREVIOUS_RESULTS",
                        help="run only the nodes REJECTed or UNREACHABLE in this earlier results directory and write retest.json, the diff")
    parser.add_argument("--forks", type=int, metavar="N", help="hosts Ansible works on at once")
    add_output_arguments(parser, "\"values(hosts)[?verdict=='REJECT'].host\" (the rejected nodes)")
    parser.set_defaults(func=cmd_validate)
    return parser

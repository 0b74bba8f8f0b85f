# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet validate``: run ``playbooks/validate_cluster.yml`` through ansible-runner.

Progress per phase goes to stderr (the phase is the task name's prefix: Preflight, Facts, Results, Verdict, Report; for
the plays of an imported playbook, the import's: Benchmarks, Burn-in; ``hosts done/total``), the summary table and the
report's path to stdout (with ``--output json`` or ``--query``: the run in full (every host record as hosts/<host>.json
holds it), or what the JMESPath expression selects from that, alone on stdout, the other lines on stderr). The exit code
is the one table of both entry points (gpufleet/results/exit_codes.py, shown by ``--help``): 0 every node accepted, 3
some REJECT, 4 some UNREACHABLE, 6 some INCOMPLETE, 1 the run failed (a results directory the controller could not
write, a playbook error: nothing judged) or the query cannot be used, 2 the command line refused, 64 an input refused
before anything ran (inventory, claim, profile, level, ``--out``). The playbook exits with the same code (the callback
gpufleet.acceptance.exit_code); its last task fails each node not accepted, which is no failed run once the verdicts are
written (``judged_despite_rc``). A write into the results directory that failed (a full disk: ``results_write_error``)
is the controller's failure: the run failed, said so with the write, and no node is judged or named as its cause
(``controller_failed``).

``--retest-failed PREVIOUS`` runs only the nodes REJECTed or UNREACHABLE in the results directory
PREVIOUS and writes ``retest.json`` (gpufleet/cli/retest.py) into the new results directory.

One run per results directory: the run holds its ``run.lock`` (results/store.py ``RunLock``) from start to end, and a
resume waits for every process of an earlier run of the directory to end (``writers_still_running``: the
ansible-playbook that opened it last, the workers and commands of any run the CLI started); ``--out`` is refused
when it is a symbolic link or a directory that is not a gpufleet results directory, unless ``--force``. Whether
fleet.json holds this run's verdicts is told by run.json's ``invocation`` (``verdicts_written``), never by the clock.

``-e``, ``--tags``, ``--skip-tags``, ``--check`` and ``--level`` go to ansible-playbook as it takes them
(playbook_options.py). A SIGINT or SIGTERM during the run is forwarded to ansible-playbook and waited for
(interrupt.py); a run so stopped before its verdict prints the command that resumes it and exits 99 (SIGINT, as
ansible-playbook does) or 143 (SIGTERM), one stopped after its verdict is reported as the finished run it is. No
process of a run outlives it (run_processes.py): when ansible-playbook ends, in any way, the CLI ends the workers and
commands it left running, and says so; when the CLI dies first, its watchdog ends them all.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpufleet import collection
from gpufleet.cli import retest, run_processes
from gpufleet.cli.ee import EEError, ee_kwargs
from gpufleet.cli.ee import engine as ee_engine
from gpufleet.cli.interrupt import Interruption, signal_name
from gpufleet.cli.progress import PHASES, VERDICT_GATE, Progress
from gpufleet.cli.playbook_options import (
    OptionsError,
    PlaybookOptions,
    add_playbook_arguments,
    program,
    resume_command,
    unknown_tags_problem,
)
from gpufleet.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    JsonOutput,
    Records,
    Subcommands,
    Verdicts,
    add_output_arguments,
    fleet_line,
    json_output,
    load_run,
    next_step_lines,
    node_verdicts,
    print_json,
    render_report,
    run_json,
    say,
    summary_table,
    terminal_text,
)
from gpufleet.results.exit_codes import EXIT_INPUT, EXIT_USAGE, VERDICT_CODES, table_text, verdict_exit_code
from gpufleet.results.shapes import FleetDocument, HostRecord, RunRecord
from gpufleet.results.store import (
    FLEET_FILE,
    RUN_FILE,
    ResultsError,
    RunDir,
    RunInUse,
    RunLock,
    default_run_id,
    foreign_contents,
    lock_holder,
    writers_still_running,
)

PLAYBOOK = "validate_cluster.yml"
# The preflight's task that stops a run whose input it refused (exit 64, also where Ansible's own code stands)
PREFLIGHT_REFUSED = "Preflight | stop the run, naming the input"
# ansible-playbook's exit status when hosts failed (2) or were unreachable (4), where the callback
# gpufleet.acceptance.exit_code did not make it exit with the run's own (a configuration that does not enable it)
RC_HOSTS_FAILED, RC_HOSTS_UNREACHABLE = 2, 4
# any fact_cache_type but "jsonfile" leaves ANSIBLE_CACHE_PLUGIN to the user's configuration (ansible-runner config/_base.py)
FACT_CACHE_AS_CONFIGURED = "as-configured"


def judged_despite_rc(rc: int | None, gate_started: bool, failed_tasks: set[str], unreachable: set[str]) -> bool:
    """ansible-playbook exited non-zero only because the fleet was judged: it reached the verdict gate, every
    failure was the gate's (a node not accepted) and otherwise hosts were unreachable (judged UNREACHABLE). Its code
    is then a verdict's (gpufleet/results/exit_codes.py), or Ansible's own 2 or 4 for the same."""
    if rc == 0:
        return True
    if rc not in VERDICT_CODES + (RC_HOSTS_FAILED,) or not gate_started or not (failed_tasks or unreachable):
        return False
    if rc == RC_HOSTS_UNREACHABLE and not unreachable:
        return False
    return all(task.startswith(VERDICT_GATE) for task in failed_tasks)


def playbook_path() -> str:
    """The validation playbook of the collection this code belongs to."""
    return collection.playbook(PLAYBOOK)


def _plays(path: str) -> list:
    """The plays (and imports) of the playbook at ``path``; none when it cannot be read."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            plays = yaml.safe_load(handle) or []
    except (OSError, yaml.YAMLError):
        return []
    return [play for play in plays if isinstance(play, dict)] if isinstance(plays, list) else []


def imported_play_phases(path: str) -> dict[str, str]:
    """{play name: phase} for the plays of the playbooks ``path`` imports. Their tasks are named by step
    ("Single node | ...", and "Preflight | ..." of their own), not by phase: the phase is the first word of the
    import's name ("Benchmarks (playbooks/benchmark.yml), ..."), told by the play's start."""
    phases = {}
    for entry in _plays(path):
        target = entry.get("ansible.builtin.import_playbook") or entry.get("import_playbook")
        phase = str(entry.get("name") or "").split(" ", 1)[0]
        if not target or phase not in PHASES:
            continue
        for play in _plays(os.path.join(os.path.dirname(path), str(target))):
            if play.get("name"):
                phases[str(play["name"])] = phase
    return phases


def run_once_tasks(path: str) -> set[str]:
    """Names of the playbook's ``run_once`` tasks, also inside blocks: their one result stands for every host."""
    names = set()
    tasks = [task for play in _plays(path) for task in (play or {}).get("tasks") or []]
    while tasks:
        task = tasks.pop()
        if not isinstance(task, dict):
            continue
        for section in ("block", "rescue", "always"):
            tasks.extend(task.get(section) or [])
        if task.get("run_once") and task.get("name"):
            names.add(str(task["name"]))
    return names


def _inventories(values: Iterable[str]) -> tuple[list[str] | None, str | None]:
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


# The variable folders Ansible reads beside an inventory, and the files in them it parses as YAML.
VARS_DIRS = ("host_vars", "group_vars")
VARS_SUFFIXES = ("", ".yml", ".yaml", ".json")


class _AnyTagLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """YAML as Ansible reads it for its syntax: its own tags (``!vault``, ``!unsafe``) are not errors."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def vars_yaml_problem(sources: list[str]) -> str | None:
    """The first ``host_vars``/``group_vars`` file beside an inventory that is not valid YAML, by file, line and
    column, with the fix: ansible-core 2.19 says only that a variable could not be read, naming no file."""
    for source in sources:
        if "," in source:
            continue  # an inline host list has no folders
        base = source if os.path.isdir(source) else os.path.dirname(source)
        for folder in VARS_DIRS:
            for current, dirs, names in os.walk(os.path.join(base, folder)):
                dirs.sort()
                for name in sorted(names):
                    if os.path.splitext(name)[1] not in VARS_SUFFIXES or name.startswith("."):
                        continue
                    problem = _yaml_problem(os.path.join(current, name))
                    if problem:
                        return problem
    return None


def _yaml_problem(path: str) -> str | None:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            text = handle.read(4 * 1024 * 1024)
    except OSError as exc:
        return "inventory variables %s cannot be read: %s" % (path, exc.strerror or exc)
    if text.lstrip().startswith("$ANSIBLE_VAULT;"):
        return None  # a vault-encrypted file: Ansible decrypts it
    try:
        yaml.load(text, Loader=_AnyTagLoader)  # noqa: S506 - a SafeLoader that ignores Ansible's tags
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = ", line %d column %d" % (mark.line + 1, mark.column + 1) if mark else ""
        return "inventory variables %s%s: not valid YAML: %s; fix the file" % (path, where, exc.problem or exc.context)
    except yaml.YAMLError as exc:
        return "inventory variables %s: not valid YAML: %s; fix the file" % (path, exc)
    return None


def runner_env() -> dict[str, str]:
    """Environment for ansible-playbook: this collection first on the collections path, the
    interpreter's own ansible-playbook first on PATH, an unparsable inventory fatal."""
    env = {}
    collections = [collection.collections_path()] + [part for part in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if part]
    env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(collections)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_RETRY_FILES_ENABLED"] = "False"
    env["ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED"] = os.environ.get("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "True")
    # ansible-playbook runs in runner's private directory: the ansible.cfg of where the user stands, else the
    # collection's when the user has none (ansible_settings)
    config, _why = ansible_settings()
    if config is not None:
        env["ANSIBLE_CONFIG"] = config
    # ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless the environment names it: a node whose host key
    # changed (an impostor) would be judged. Ansible's own policy (its default, ansible.cfg) is passed on instead.
    if "ANSIBLE_HOST_KEY_CHECKING" not in os.environ:
        env["ANSIBLE_HOST_KEY_CHECKING"] = host_key_checking(env.get("ANSIBLE_CONFIG") or os.environ.get("ANSIBLE_CONFIG"))
    return env


# Where Ansible looks for a user's ansible.cfg besides ANSIBLE_CONFIG and the current directory.
USER_CONFIGS = ("~/.ansible.cfg", "/etc/ansible/ansible.cfg")


def ansible_settings() -> tuple[str | None, str]:
    """``(ANSIBLE_CONFIG to set or None, which settings the run uses, in words)``. The user's own ansible.cfg wins
    (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg, as Ansible looks); without one, the
    collection's (forks 25, pipelining, the ssh keepalives that end a dropped node's task, the exit-code callback),
    which an installed wheel or a Galaxy install would otherwise lose: ansible-playbook runs in ansible-runner's
    private directory, where none is found."""
    if os.environ.get("ANSIBLE_CONFIG"):
        return None, "%s (ANSIBLE_CONFIG)" % os.environ["ANSIBLE_CONFIG"]
    if os.path.isfile("ansible.cfg"):
        return os.path.abspath("ansible.cfg"), "%s (the current directory's)" % os.path.abspath("ansible.cfg")
    for path in USER_CONFIGS:
        if os.path.isfile(os.path.expanduser(path)):
            return None, "%s (yours)" % os.path.expanduser(path)
    shipped = os.path.join(collection.collection_root(), "ansible.cfg")
    if os.path.isfile(shipped):
        return shipped, "%s (the collection's: no ansible.cfg of yours was found)" % shipped
    return None, "Ansible's defaults (no ansible.cfg found)"


def host_key_checking(config_file: str | None) -> str:
    """``True`` or ``False``: the host-key checking ansible-playbook would apply with ``config_file`` (or the
    ansible.cfg Ansible finds: ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg); Ansible's default, True,
    when none says otherwise. An inventory's ``ansible_host_key_checking`` and its ssh arguments
    (``StrictHostKeyChecking=yes``) still apply per host, as with ansible-playbook."""
    try:
        # Ansible's own reading of its configuration (ini, environment, default); Ansible is the CLI's dependency
        from ansible.config.manager import ConfigManager  # pylint: disable=import-outside-toplevel
        value = ConfigManager(conf_file=config_file).get_config_value("HOST_KEY_CHECKING")
    except Exception:  # pylint: disable=broad-except  # an unreadable config: the safe side, Ansible's default
        value = True
    return "False" if value is False else "True"


def _error_lines(runner: Any) -> list[str]:
    """What Ansible said went wrong, from the run's captured output; a failure Ansible ignored (``...ignoring``
    on the next line: ignore_errors) is no cause of anything and is left out."""
    try:
        text = runner.stdout.read()
    except (AttributeError, OSError, ValueError):
        return []
    lines = text.splitlines()
    wanted = [line for index, line in enumerate(lines)
              if ("ERROR" in line or "fatal:" in line or "FAILED!" in line or "[WARNING]: Unable to parse" in line)
              and not (index + 1 < len(lines) and lines[index + 1].strip() == "...ignoring")]
    return [terminal_text(line, 2000) for line in wanted[-20:]]


@contextmanager
def child_signal_recorded(record: dict[str, int]) -> Iterator[dict[str, int]]:
    """Within the block, ``record["signal"]`` is set to the signal that ended ansible-playbook, if one did.

    ansible-runner keeps only pexpect's ``exitstatus``, None for a process a signal ended (SIGKILL by the
    kernel's OOM killer or a user): the number is read from pexpect's ``signalstatus`` when the child is closed.
    """
    import pexpect  # pylint: disable=import-outside-toplevel  # ansible-runner's own dependency, as ansible_runner

    original = pexpect.spawn.close

    def close(child: Any, force: bool = True) -> Any:
        try:
            return original(child, force)
        finally:
            if getattr(child, "signalstatus", None) is not None:
                record["signal"] = child.signalstatus

    pexpect.spawn.close = close
    try:
        yield record
    finally:
        pexpect.spawn.close = original


def playbook_outcome(rc: int | None, status: str | None) -> str:
    """How ansible-playbook ended, in words: ``exit 2``, ``killed by signal 9 (SIGKILL)``, ``no exit status``.
    A negative ``rc`` is the signal that ended it (run_playbook)."""
    if rc is None:
        return "ansible-playbook %s with no exit status (ended by a signal that could not be told)" % (status or "ended")
    if rc < 0:
        return "ansible-playbook killed by signal %d (%s), not stopped by gpufleet" % (-rc, signal_name(-rc))
    return "ansible-playbook %s, exit %s" % (status, rc)


def on_disk(results_dir: str, run: RunRecord | None, fleet: FleetDocument | None, hosts: Records | None) -> str:
    """What a run that ended early left in its results directory: run.json, the host records (of how many
    hosts of the run, which ones), whether fleet.json was written."""
    if run is None:
        # the directory itself may be there: the CLI holds its lock in it from the start
        what = "no run.json: the run stopped before its preflight wrote it" \
            if not os.path.exists(os.path.join(results_dir, RUN_FILE)) \
            else "no readable run.json (nothing of this run can be resumed from it)"
        return "on disk in %s: %s" % (results_dir, what)
    names = sorted(hosts or {})
    total = len(run.get("hosts") or [])
    shown = ", ".join(terminal_text(name, 60) for name in names[:10]) + (", ..." if len(names) > 10 else "")
    records = "host records of %d of %d host(s)%s" % (len(names), total, ": " + shown if names else "")
    verdicts = "fleet.json written (the verdicts)" if fleet is not None else "no fleet.json (nothing judged)"
    return "on disk in %s: run.json (status %s), %s, %s" % (results_dir, terminal_text(run.get("status")), records, verdicts)


def controller_failed(request: Request, failures: list[str], run: RunRecord | None, fleet: FleetDocument | None,
                      hosts: Records | None, private_dir: str) -> int:
    """A write into the results directory failed (``failures``: the store's messages, a full disk): the run failed
    for the controller's fault, and says so; no node is named as its cause, none is judged. EXIT_FAILED."""
    command, results_dir = request.command, request.results_dir
    say("gpufleet %s: the run failed on the controller, not on any node: %s"
        % (command, terminal_text(failures[0], 2000)))
    for message in failures[1:3]:
        say("  also: " + terminal_text(message, 2000))
    if len(failures) > 3:
        say("  and %d more writes that failed" % (len(failures) - 3))
    say("  nothing was judged: no node is blamed for a write the controller could not make")
    say("  " + on_disk(results_dir, run, fleet, hosts))
    if run is not None:
        say("  resume with: %s" % resume_command(request.resume, results_dir))
    say("  full Ansible output: %s" % os.path.join(private_dir, "artifacts"))
    return EXIT_FAILED


def runner_kwargs(private_dir: str, inventories: list[str], results_dir: str, limit: str | None = None,
                  profile: str | None = None, forks: int | None = None,
                  options: PlaybookOptions | None = None) -> dict[str, Any]:
    """The ``ansible_runner.run`` arguments of a run (without its event handler and cancel callback).

    The user's ``-e`` and ``--check`` go into ``cmdline``, which ansible-runner puts before its own
    ``-e`` of ``extravars``: the CLI's variables (``--out``, ``--profile``, ``--level``) are read last and win.
    """
    options = options or PlaybookOptions()
    extravars: dict[str, Any] = {"gpufleet_results_dir": results_dir}
    if profile:
        extravars["gpufleet_profile"] = profile
    extravars.update(options.extravars())
    kwargs: dict[str, Any] = {
        "private_data_dir": private_dir,
        "playbook": playbook_path(),
        "inventory": inventories,
        "extravars": extravars,
        "envvars": runner_env(),
        "quiet": True,
        "suppress_env_files": True,
        # not runner's default "jsonfile" (ANSIBLE_CACHE_PLUGIN=jsonfile, one file per host name: a host named
        # rack1/node1 crashed the run): the fact cache ansible-playbook has, Ansible's default or ansible.cfg's
        "fact_cache_type": FACT_CACHE_AS_CONFIGURED,
    }
    kwargs.update(options.runner_kwargs())
    if limit:
        kwargs["limit"] = limit
    if forks:
        kwargs["forks"] = forks
    return kwargs


def run_playbook(inventories: list[str], results_dir: str, limit: str | None = None, profile: str | None = None,
                 forks: int | None = None, progress: Progress | None = None, options: PlaybookOptions | None = None,
                 interruption: Interruption | None = None) -> tuple[int | None, str | None, list[str], str]:
    """Run the validation playbook; returns ``(rc, status, errors, private_dir)``: ``rc`` is ansible-playbook's exit
    status, minus the signal's number when a signal ended it (SIGKILL: -9), None when that is not known.

    ``private_dir`` is runner's directory (its artifacts hold the full Ansible output); the caller
    removes it when the run went well. With ``interruption``, a SIGINT or SIGTERM during the run is
    forwarded to ansible-playbook, which is waited for (``Interruption``), instead of ending the CLI.
    No process of the run outlives it: what ansible-playbook left running when it ended is ended, and said, before
    this returns, and all of it when the CLI dies first (run_processes.py ``guarded``).
    """
    # ansible-runner is a dependency of the gpufleet CLI, not of the collection's plugins: imported only here
    import ansible_runner  # pylint: disable=import-outside-toplevel

    private_dir = tempfile.mkdtemp(prefix="gpufleet-runner-")
    say("gpufleet: Ansible settings from %s" % ansible_settings()[1])
    kwargs = runner_kwargs(private_dir, inventories, results_dir, limit=limit, profile=profile, forks=forks,
                           options=options)
    interruption = interruption or Interruption()

    def on_event(event: dict[str, Any]) -> bool:
        interruption.watch(event)
        return progress(event) if progress is not None else True

    kwargs["event_handler"] = on_event

    def cancel() -> bool:
        # ansible-runner calls this every few seconds: the heartbeat of a quiet phase rides on it
        if progress is not None and hasattr(progress, "tick"):
            progress.tick()
        return interruption.cancel()

    kwargs["cancel_callback"] = cancel
    if options is not None and options.ee:
        kwargs = ee_kwargs(kwargs, options.ee, results_dir, options.ee_mounts)
    ended: dict[str, int] = {}
    with interruption.installed(), run_processes.guarded(results_dir) as launch, child_signal_recorded(ended):
        kwargs["envvars"].update(launch.environment())
        runner = ansible_runner.run(**kwargs)
    for line in launch.lines(interruption.label, " that ansible-playbook left running"):
        say(line)
    rc = runner.rc
    if rc is None and ended.get("signal"):
        rc = -int(ended["signal"])  # as subprocess has it: killed by that signal
    errors = _error_lines(runner) if rc != 0 else []
    return rc, runner.status, errors, private_dir


def current_report(results_dir: str) -> str | None:
    """The report.html the playbook's report role rendered for this run's verdicts, or None (missing or older than fleet.json)."""
    html = os.path.join(results_dir, "report.html")
    try:
        return html if os.stat(html).st_mtime >= os.stat(os.path.join(results_dir, FLEET_FILE)).st_mtime else None
    except OSError:
        return None


def report_and_summary(results_dir: str, verdicts: Verdicts, hosts: Records, extra_lines: Iterable[str] = (),
                       rerender: bool = False, output: JsonOutput | None = None, document: Any = None,
                       command: str = "validate", fleet: FleetDocument | None = None) -> int:
    """Render the report (unless the playbook already did and nothing was added since), print the
    summary table, the fleet line and where the report is.

    When ``output`` wants JSON, ``document`` (what ``--query`` selects from it) is all of stdout and
    the other lines go to stderr. EXIT_FAILED when the query fails on the document, else EXIT_OK."""
    report, why = (current_report(results_dir), None) if not rerender else (None, None)
    if not report:
        report, why = render_report(results_dir)
    lines = [fleet_line(verdicts, fleet), *next_step_lines(verdicts, hosts, results_dir), *extra_lines,
             "results: %s" % results_dir, "report: %s" % report if report else "report: not rendered: %s" % why]
    if output is not None and output.wanted:
        if print_json(output, document, command) != EXIT_OK:
            return EXIT_FAILED
        for line in lines:
            say(line)  # stdout holds the JSON alone, for a pipe
        return EXIT_OK
    sys.stdout.write(summary_table(verdicts, hosts) + "\n\n" + "".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return EXIT_OK


def output_arguments(output: JsonOutput | None) -> list[str]:
    """``--output json`` or ``--query EXPR`` as given (for the resume command)."""
    if output is None or not output.wanted:
        return []
    return ["--query", output.query] if output.query is not None else ["--output", "json"]


def validate_command(inventory: list[str], limit: str | None = None, profile: str | None = None,
                     retest_failed: str | None = None, forks: int | None = None,
                     options: PlaybookOptions | None = None, output: JsonOutput | None = None,
                     force: bool = False) -> list[str]:
    """``gpufleet validate`` with these options, paths absolute (inventories as ``_inventories`` gives
    them): the command that resumes the run, with ``--out`` added (``resume_command``)."""
    command = program() + ["validate"]
    for source in inventory:
        command += ["-i", source]
    for flag, value in (("--limit", limit), ("--profile", profile), ("--forks", forks),
                        ("--retest-failed", os.path.abspath(retest_failed) if retest_failed else None)):
        if value:
            command += [flag, str(value)]
    command += (options or PlaybookOptions()).arguments() + output_arguments(output)
    return command + (["--force"] if force else [])


def opened_by_this_run(run: RunRecord | None, before: str | None) -> bool:
    """run.json was opened by this run's ansible-playbook: it names an invocation (the action's token of the
    ansible-playbook run that opened it last), and not ``before``, the one it named when this run started."""
    if not run:
        return False
    return run.get("invocation") is not None and run.get("invocation") != before


def verdicts_written(run: RunRecord | None, fleet: FleetDocument | None, before: str | None = None) -> bool:
    """fleet.json holds this run's verdicts: this run opened run.json (``opened_by_this_run``) and fleet.json was
    written by that same opening (its ``invocation``). Not told by time: a clock stepped back between two runs
    would make an earlier run's fleet.json look newer than this run's start."""
    if not run or not fleet or not fleet.get("node_verdicts"):
        return False
    return opened_by_this_run(run, before) and fleet.get("invocation") == run.get("invocation")


def forks_problem(forks: int | None) -> str | None:
    """``--forks`` that is not a positive integer, in words (ansible-playbook would stop without saying why)."""
    if forks is None or (isinstance(forks, int) and forks >= 1):
        return None
    return "--forks %s: the number of hosts Ansible works on at once must be a positive integer" % forks


def out_problem(results_dir: str, force: bool) -> str | None:
    """Why ``--out`` is refused: a symbolic link, or something that is not a gpufleet results directory
    (``foreign_contents``); None when it may be written, or with ``force``."""
    found = foreign_contents(results_dir)
    if found is None or force:
        return None
    what = "is " + found if os.path.islink(results_dir) else "is not a gpufleet results directory: it is " + found
    return "--out %s %s; choose an empty or new directory, or --force to write into it anyway" % (results_dir, what)


def invocation_before(results_dir: str) -> str | None:
    """The invocation run.json names before this run starts (None when there is no readable run.json)."""
    try:
        return RunDir.open(results_dir).read_run().get("invocation")
    except ResultsError:
        return None


@dataclass
class Request:
    """One ``gpufleet validate`` run as :func:`validate` has checked it: what :func:`run_and_judge` runs."""

    inventories: list[str]
    results_dir: str
    command: str
    resume: list[str]
    limit: str | None = None
    profile: str | None = None
    forks: int | None = None
    output: JsonOutput | None = None
    options: PlaybookOptions = field(default_factory=PlaybookOptions)
    # --retest-failed: the previous results directory and the nodes run again
    previous: str | None = None
    retested: list[str] | None = None


def validate(inventory: list[str], limit: str | None = None, profile: str | None = None, out: str | None = None,
             retest_failed: str | None = None, forks: int | None = None, command: str = "validate",
             output: JsonOutput | None = None, options: PlaybookOptions | None = None,
             resume: list[str] | None = None, force: bool = False) -> int:
    """The whole of ``gpufleet validate``; returns the exit code. ``output``: the ``--output``/``--query``
    asked for (the table when None); ``options``: what else goes to ansible-playbook (``-e``, tags,
    ``--check``, ``--level``); ``resume``: the command (without ``--out``) that resumes an interrupted
    run (default: ``gpufleet validate`` with these arguments); ``force``: write into ``out`` even when it is a
    symbolic link or a directory that is not a gpufleet results directory."""
    options = options or PlaybookOptions()
    usage = forks_problem(forks) or unknown_tags_problem(options, playbook_path())
    if usage:
        say("gpufleet %s: %s" % (command, terminal_text(usage)))
        return EXIT_USAGE
    inventories, problem = _inventories(inventory)
    results_dir = os.path.abspath(out or os.path.join("results", default_run_id()))
    problem = problem or vars_yaml_problem(inventories or []) or out_problem(results_dir, force)
    if problem or inventories is None:  # no inventories: _inventories said why
        say("gpufleet %s: %s" % (command, terminal_text(problem)))
        return EXIT_INPUT
    if resume is None:
        resume = validate_command(inventories, limit=limit, profile=profile, retest_failed=retest_failed, forks=forks,
                                  options=options, output=output, force=force)
    request = Request(inventories, results_dir, command, resume, limit=limit, profile=profile, forks=forks,
                      output=output, options=options)
    if retest_failed:
        code = retest_request(request, retest_failed)
        if code is not None:
            return code
    lock = RunLock(results_dir, "gpufleet %s" % command)
    try:
        stale = lock.acquire()
    except RunInUse as exc:
        say("gpufleet %s: %s" % (command, terminal_text(exc)))
        return EXIT_INPUT
    except OSError as exc:
        say("gpufleet %s: --out %s: %s" % (command, results_dir, exc.strerror or exc))
        return EXIT_FAILED
    try:
        if stale:
            say("gpufleet %s: took over %s from %s, which no longer runs" % (command, lock.path, lock_holder(stale)))
        return run_and_judge(request)
    finally:
        lock.release()


def retest_request(request: Request, retest_failed: str) -> int | None:
    """``--retest-failed PREVIOUS``: the failed nodes of PREVIOUS put into ``request`` (its limit narrowed to them);
    the exit code when there is nothing to run (a bad PREVIOUS, or none failed), else None."""
    command = request.command
    previous = os.path.abspath(retest_failed)
    if previous == request.results_dir:
        say("gpufleet %s: --out must be a new directory, not the previous run %s" % (command, previous))
        return EXIT_FAILED
    try:
        retested = retest.failed_nodes(previous)
    except ResultsError as exc:
        say("gpufleet %s: --retest-failed: %s" % (command, exc))
        return EXIT_INPUT
    if not retested:
        say("gpufleet %s: nothing to retest: every node of %s was accepted" % (command, previous))
        return EXIT_OK
    say("gpufleet %s: retesting %d node(s) that failed in %s: %s"
        % (command, len(retested), previous, ", ".join(terminal_text(host) for host in retested)))
    request.limit = ",".join(retested) + (",&" + request.limit if request.limit else "")
    request.previous, request.retested = previous, retested
    return None


@dataclass
class _Ended:
    """How one run of the playbook ended, and what it left in the results directory (:func:`run_and_judge`)."""

    request: Request
    progress: Progress
    interruption: Interruption
    before: str | None  # the invocation run.json named before this run
    rc: int | None
    status: str | None
    errors: list[str]
    private_dir: str
    run: RunRecord | None = None
    fleet: FleetDocument | None = None
    hosts: dict[str, HostRecord] | None = None
    # finished by this run: an earlier run's finished run.json and fleet.json, left as they were, are not
    finished: bool = False

    @property
    def written(self) -> bool:
        """fleet.json holds this run's verdicts (:func:`verdicts_written`)."""
        return verdicts_written(self.run, self.fleet, self.before)

    def say(self, text: str) -> None:
        say("gpufleet %s: %s" % (self.request.command, text))

    def artifacts(self) -> None:
        say("  full Ansible output: %s" % os.path.join(self.private_dir, "artifacts"))


def _run(request: Request, before: str | None) -> _Ended:
    """Run the playbook for ``request`` and read what it left in the results directory."""
    progress = Progress(request.results_dir, once=run_once_tasks(playbook_path()), command=request.command,
                        plays=imported_play_phases(playbook_path()))
    interruption = Interruption(label="gpufleet %s" % request.command)
    rc, status, errors, private_dir = run_playbook(request.inventories, request.results_dir, limit=request.limit,
                                                   profile=request.profile, forks=request.forks, progress=progress,
                                                   options=request.options, interruption=interruption)
    ended = _Ended(request, progress, interruption, before, rc, status, errors, private_dir)
    try:
        ended.run, ended.fleet, ended.hosts = load_run(request.results_dir)
    except ResultsError:
        pass
    ended.finished = ended.run is not None and ended.run.get("status") == "finished" and ended.written
    return ended


def _interrupted(ended: _Ended) -> int | None:
    """A SIGINT or SIGTERM stopped the run: before the verdict, the exit code for the signal (and how to resume);
    after it, the run is over but for its report (None: go on, as a finished run)."""
    interruption = ended.interruption
    if interruption.signum is None:
        return None
    name = signal_name(interruption.signum)
    if interruption.killed:
        ended.say("ansible-playbook did not end within %ds of the %s: it was killed" % (interruption.grace_s, name))
    if not ended.written:
        progress, results_dir = ended.progress, ended.request.results_dir
        phase = "the %s phase" % progress.phase if progress.phase else "its start"
        ended.say("interrupted (%s) in %s, before the verdict: nothing was judged%s"
                  % (name, phase, "; what was gathered is kept in %s" % results_dir if ended.run is not None else ""))
        ended.say("resume with: %s" % resume_command(ended.request.resume, results_dir))
        ended.artifacts()
        return interruption.exit_code
    # the verdicts are on disk: the run is over but for its report, rendered below when missing
    ended.say("interrupted (%s) after the verdict was written: the run is complete" % name)
    ended.rc, ended.finished = 0, True
    return None


def _settle_rc(ended: _Ended) -> None:
    """ansible-playbook's exit status that is no failure of the run: the playbook failed the nodes it did not accept,
    or a signal ended it after the verdicts were written."""
    progress = ended.progress
    if ended.rc != 0 and ended.finished and judged_despite_rc(ended.rc, progress.gate_started, progress.failed_tasks,
                                                              progress.unreachable):
        ended.rc = 0  # the playbook failed the nodes it did not accept: the exit code comes from the verdicts below
    if (ended.rc is None or ended.rc < 0) and ended.written:
        ended.say("%s after the verdict was written: the run is complete" % playbook_outcome(ended.rc, ended.status))
        ended.rc, ended.finished = 0, True


def _killed(ended: _Ended) -> int | None:
    """Ended by a signal from outside (the OOM killer, kill -9): no node error is its cause; say what is kept."""
    if ended.rc is not None and ended.rc >= 0:
        return None
    ended.say("the run failed (%s); nothing was judged" % playbook_outcome(ended.rc, ended.status))
    say("  " + on_disk(ended.request.results_dir, ended.run, ended.fleet, ended.hosts))
    for line in ended.progress.failures:
        say("  earlier node failure (not the cause): " + line)
    if ended.run is not None:
        say("  resume with: %s" % resume_command(ended.request.resume, ended.request.results_dir))
    ended.artifacts()
    return EXIT_FAILED


def _controller_failure(ended: _Ended) -> int | None:
    """A write into the results directory failed before the verdicts: the controller's failure (controller_failed)."""
    if not ended.progress.write_failures or ended.written:
        return None
    return controller_failed(ended.request, ended.progress.write_failures, ended.run, ended.fleet, ended.hosts,
                             ended.private_dir)


def _failed_after_verdict(ended: _Ended) -> int | None:
    """A step after the verdict failed (the report, a notification): the verdicts stand and are shown, the run
    failed."""
    if ended.rc == 0 or not ended.written or ended.run is None or ended.hosts is None:
        return None
    ended.say("the run failed (%s) after the verdicts were written to %s; they are shown below"
              % (playbook_outcome(ended.rc, ended.status), os.path.join(ended.request.results_dir, "fleet.json")))
    for line in ended.progress.failures or ended.errors:
        say("  " + line)
    ended.artifacts()
    summarise(ended.request, ended.run, ended.fleet, ended.hosts)
    return EXIT_FAILED


def _input_refused(ended: _Ended) -> int | None:
    """The playbook's preflight refused an input (a claim, a profile, the level): nothing ran."""
    if not (ended.rc == EXIT_INPUT or PREFLIGHT_REFUSED in ended.progress.failed_tasks) or ended.finished:
        return None
    ended.say("an input was refused before anything ran; nothing was judged")
    for line in ended.progress.failures or ended.errors:
        say("  " + line)
    return EXIT_INPUT


def _not_finished(ended: _Ended) -> int | None:
    """The run failed, or did not reach its verdict (no host matched; tags that left the verdict out)."""
    # a finished run has its run.json (finished is told from it)
    if ended.rc == 0 and ended.finished and ended.run is not None:
        return None
    request, results_dir = ended.request, ended.request.results_dir
    ended.say("the run failed (%s); nothing was judged" % playbook_outcome(ended.rc, ended.status))
    for line in ended.progress.failures or ended.errors:
        say("  " + line)
    if not opened_by_this_run(ended.run, ended.before) and ended.rc == 0:
        limit = request.limit
        say("  no results were written: no host of the inventory matched%s" % (" --limit %s" % limit if limit else ""))
    elif ended.rc == 0 and (request.options.tags or request.options.skip_tags):
        say("  --tags/--skip-tags left out the verdict (the plays tagged report); what was gathered is kept in %s"
            % results_dir)
    ended.artifacts()
    return EXIT_FAILED


# How a run that is not simply finished ends, in the order they are told apart (:func:`run_and_judge`)
_ENDINGS: tuple[Callable[[_Ended], int | None], ...] = (_killed, _controller_failure, _failed_after_verdict,
                                                        _input_refused, _not_finished)


def run_and_judge(request: Request) -> int:
    """Run the playbook for ``request`` (its results directory locked) and report what it judged; the exit code."""
    command, results_dir = request.command, request.results_dir
    before = invocation_before(results_dir)
    still_written = writers_still_running(results_dir, before)
    if still_written:
        say("gpufleet %s: %s" % (command, terminal_text(still_written)))
        return EXIT_FAILED
    if os.path.exists(os.path.join(results_dir, RUN_FILE)):
        say("gpufleet %s: %s holds an earlier run: resuming it (hosts already gathered are not gathered again)"
            % (command, results_dir))
    ended = _run(request, before)
    code = _interrupted(ended)
    if code is not None:
        return code
    _settle_rc(ended)
    for ending in _ENDINGS:
        code = ending(ended)
        if code is not None:
            return code
    assert ended.run is not None and ended.hosts is not None  # _not_finished: a finished run has its records
    shutil.rmtree(ended.private_dir, ignore_errors=True)
    return summarise(request, ended.run, ended.fleet, ended.hosts)


def summarise(request: Request, run: RunRecord, fleet: FleetDocument | None, hosts: dict[str, HostRecord]) -> int:
    """The finished run's retest diff (``--retest-failed``), summary table and report; the exit code."""
    results_dir, output = request.results_dir, request.output
    verdicts = node_verdicts(run, fleet, hosts)
    extra = []
    if request.retested is not None and request.previous is not None:  # set together (retest_request)
        path, document = retest.write_retest(request.previous, results_dir, request.retested)
        extra = retest.retest_lines(document) + ["retest diff: %s" % path]
    run_document = run_json(run, fleet, hosts) if output is not None and output.wanted else None
    # retest.json is written after the playbook rendered its report: render it again to show the diff
    shown = report_and_summary(results_dir, verdicts, hosts, extra, rerender=request.retested is not None,
                               output=output, document=run_document, command=request.command, fleet=fleet)
    if shown != EXIT_OK:
        return EXIT_FAILED
    return verdict_exit_code(verdicts)


def cmd_validate(args: argparse.Namespace) -> int:
    output = json_output(args, "validate")
    if output is None:
        return EXIT_FAILED
    try:
        options = PlaybookOptions.from_args(args)
    except OptionsError as exc:
        say("gpufleet validate: %s" % exc)
        return EXIT_FAILED
    if options.ee:
        try:
            ee_engine()
        except EEError as exc:
            say("gpufleet validate: %s" % exc)
            return EXIT_INPUT
    return validate(args.inventory, limit=args.limit, profile=args.profile, out=args.out,
                    retest_failed=args.retest_failed, forks=args.forks, output=output, options=options,
                    force=args.force)


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    """``gpufleet validate``."""
    parser = commands.add_parser(
        "validate",
        help="run the acceptance playbook on an inventory and print the verdicts",
        description="Run playbooks/validate_cluster.yml (facts -> checks -> verdicts) through ansible-runner. Progress per phase on "
                    "stderr; the summary table and the report's path on stdout.",
        epilog="exit codes (the same for ansible-playbook playbooks/validate_cluster.yml):\n" + table_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="INVENTORY",
                        help="inventory file or directory (repeatable), or a comma-separated host list")
    parser.add_argument("--limit", metavar="HOSTS", help="only these hosts (an Ansible host pattern)")
    parser.add_argument("--profile", metavar="NAME", help="judge every node against this threshold profile (gpufleet/profiles/NAME.yml)")
    parser.add_argument("--out", metavar="DIR",
                        help="results directory (default: results/<UTC timestamp>); an existing one is resumed. A "
                             "symbolic link, or a directory that is not empty and not a gpufleet results directory, "
                             "is refused without --force; so is a directory another run is writing")
    parser.add_argument("--force", action="store_true",
                        help="write into --out even when it is a symbolic link or a directory of other files")
    parser.add_argument("--retest-failed", metavar="PREVIOUS_RESULTS",
                        help="run only the nodes REJECTed or UNREACHABLE in this earlier results directory and write retest.json, the diff")
    parser.add_argument("--forks", type=int, metavar="N", help="hosts Ansible works on at once")
    add_playbook_arguments(parser)
    add_output_arguments(parser, "\"values(hosts)[?verdict=='REJECT'].host\" (the rejected nodes)")
    parser.set_defaults(func=cmd_validate)
    return parser

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``gpufleet validate`` and ``gpufleet demo`` pass on to ansible-playbook as ansible-playbook takes it:
``-e/--extra-vars`` (repeatable: ``key=value``, a JSON or YAML string, or ``@file``), ``--tags``,
``--skip-tags``, ``--check``, ``--level`` (the extra var ``gpufleet_level``) and ``--reference-job`` (the extra var
``gpufleet_reference_job``, read by :func:`reference_job_option`, which ``gpufleet report --reference-job`` uses
too); the playbook's tags, which ``--tags`` and ``--skip-tags`` must name (:func:`playbook_tags`); and the command line
that resumes an interrupted run.

The extra vars are read with Ansible's own rules (``ansible.utils.vars.load_extra_vars``) before
anything runs, so that a malformed one is refused at once, then handed to ansible-playbook
unchanged (a relative ``@file`` made absolute: ansible-playbook runs in ansible-runner's private
directory). The CLI's own options are the last ``-e`` ansible-playbook reads, so ``--out``,
``--profile`` and ``--level`` win over an ``-e`` that sets the same variable.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpufleet.collection import collection_root
from gpufleet.parsers.common import ParseError, refuse_deep_json
from gpufleet.report.cost import ReferenceJobError, validate_job

# Tags Ansible itself gives a meaning to: valid in --tags and --skip-tags whatever the playbook tags.
ANSIBLE_SPECIAL_TAGS = ("all", "always", "never", "tagged", "untagged")
# What a task, block or play may name a statically imported file or role by (ansible.builtin. or short).
_IMPORT_TASKS = ("import_tasks", "ansible.builtin.import_tasks", "ansible.legacy.import_tasks")
_IMPORT_ROLE = ("import_role", "ansible.builtin.import_role", "ansible.legacy.import_role")
_IMPORT_PLAYBOOK = ("import_playbook", "ansible.builtin.import_playbook", "ansible.legacy.import_playbook")
# The task lists of a play and of a block that --list-tags walks (handlers are not listed).
_PLAY_TASK_LISTS = ("pre_tasks", "tasks", "post_tasks")
_BLOCK_TASK_LISTS = ("block", "rescue", "always")
COLLECTION_PREFIX = "gpufleet.acceptance."
LEVELS = ("quick", "standard", "full")
LEVEL_VAR = "gpufleet_level"
# --slurm-drain: the verdicts as Slurm drains (playbooks/validate_cluster.yml, gpufleet/results/slurm_drain.py)
SLURM_DRAIN_VAR = "gpufleet_slurm_drain"
RESULTS_DIR_VAR = "gpufleet_results_dir"
REFERENCE_JOB_VAR = "gpufleet_reference_job"
REFERENCE_JOB_HELP = ("the cost view's reference job as JSON, e.g. '{\"mfu\": 0.45, \"tokens\": 2e12}' "
                      "(keys: docs/report.md); "
                      "default: the run's %s, else 7B and 70B, 1T tokens, bf16" % REFERENCE_JOB_VAR)
VAULT_HEADER = "$ANSIBLE_VAULT;"


class OptionsError(Exception):
    """An option ansible-playbook would refuse, or one the CLI must own (one line)."""


def _load_extra_vars(value: str) -> dict | None:
    """One ``-e`` value read as ansible-playbook reads it: a mapping, or None for a vault-encrypted file
    (read by ansible-playbook with its vault secrets, not here). OptionsError when Ansible would refuse it."""
    # imported here: Ansible's parser costs the commands that take no -e nothing
    from ansible.errors import AnsibleError  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.parsing.splitter import parse_kv  # pylint: disable=import-outside-toplevel

    loader = DataLoader()
    try:
        if value.startswith("@"):
            with open(value[1:], "r", encoding="utf-8", errors="replace") as handle:
                if handle.read(len(VAULT_HEADER)) == VAULT_HEADER:
                    return None
            data = loader.load_from_file(value[1:])
        elif value[0] in ("/", "."):
            raise OptionsError("-e %s: a file of extra vars is written @%s, as ansible-playbook takes it"
                               % (value, value))
        elif value[0] in ("[", "{"):
            data = loader.load(value)
        else:
            data = parse_kv(value)
    except OSError as exc:
        raise OptionsError("-e %s: %s" % (value, exc.strerror or exc)) from None
    except AnsibleError as exc:
        raise OptionsError("-e %s: %s" % (value, " ".join(str(exc.message).split()))) from None
    if not isinstance(data, dict):
        raise OptionsError("-e %s: not a set of variables (a mapping of names to values)" % value)
    return data


def extra_vars_arguments(values: list[str]) -> list[str]:
    """The ``-e`` values to hand to ansible-playbook, in order: each checked with Ansible's rules, a
    ``@file`` given by its absolute path. OptionsError for one ansible-playbook would refuse, and for
    ``gpufleet_results_dir``, which the CLI must know to read the results (``--out``)."""
    arguments = []
    for value in values:
        if not value:
            continue  # ansible-playbook skips an empty -e too
        if value.startswith("@"):
            value = "@" + os.path.abspath(os.path.expanduser(value[1:]))
        data = _load_extra_vars(value)
        if data is not None and RESULTS_DIR_VAR in data:
            raise OptionsError("-e %s: the results directory is given with --out DIR "
                               "(the CLI reads the results from it)" % value)
        arguments.append(value)
    return arguments


def reference_job_option(text: str | None) -> dict | None:
    """``--reference-job JSON`` (of ``gpufleet validate``, ``demo`` and ``report``): the mapping given, checked
    with the cost view's own rules (report/cost.py ``validate_job``); None when not given. OptionsError (naming
    the option and the key) for text that is not JSON or a job the cost view would refuse."""
    if text is None:
        return None
    try:
        refuse_deep_json(text, what="the job")  # before json.loads, which recurses: a RecursionError otherwise
        job = json.loads(text)
    except ParseError as exc:
        raise OptionsError("--reference-job: %s" % exc.message) from None
    except ValueError as exc:
        raise OptionsError("--reference-job: not JSON: %s" % exc) from None
    try:
        validate_job(job)
    except ReferenceJobError as exc:
        raise OptionsError("--reference-job: %s" % exc) from None
    return job


def add_reference_job_argument(parser: argparse.ArgumentParser) -> None:
    """``--reference-job JSON``, one spelling for every command that takes it."""
    parser.add_argument("--reference-job", metavar="JSON", help=REFERENCE_JOB_HELP)


# -- the playbook's tags ---------------------------------------------------------------------------------------

def _yaml(path: str, kind: type) -> Any:
    """The YAML document at ``path`` (a playbook, task file or role meta) when it is a ``kind``; an empty one when it
    cannot be read or is not one."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return kind()
    return data if isinstance(data, kind) else kind()


def _tag_values(value: Any) -> set[str]:
    """The tags of a ``tags:`` keyword: a list, or one string of tags separated by commas, as Ansible reads it."""
    items = value if isinstance(value, list) else str(value).split(",") if value is not None else []
    return {str(item).strip() for item in items if str(item).strip()}


def _role_dir(name: Any) -> str | None:
    """The directory of a role of this collection (``gpufleet.acceptance.facts`` or ``facts``); None for another."""
    name = str(name or "")
    short = name[len(COLLECTION_PREFIX):] if name.startswith(COLLECTION_PREFIX) else name
    path = os.path.join(collection_root(), "roles", short)
    return path if short and "{{" not in short and os.path.isdir(path) else None


def _role_tags(name: Any, tasks_from: Any = None, seen: set | None = None) -> set[str]:
    """The tags of a statically imported role: its entry tasks file and the roles its meta names as dependencies."""
    role = _role_dir(name)
    if role is None:
        return set()
    tags = set()
    meta = _yaml(os.path.join(role, "meta", "main.yml"), dict)
    for dependency in meta.get("dependencies") or []:
        entry = dependency if isinstance(dependency, dict) else {"role": dependency}
        tags |= _tag_values(entry.get("tags")) | _role_tags(entry.get("role") or entry.get("name"), seen=seen)
    stem = str(tasks_from or "main")
    for candidate in (stem, stem + ".yml", stem + ".yaml"):
        path = os.path.join(role, "tasks", candidate)
        if os.path.isfile(path):
            return tags | _file_tags(path, seen)
    return tags


def _file_tags(path: str, seen: set | None) -> set[str]:
    """The tags of a task file (once per walk: a file imported twice adds nothing new)."""
    seen = set() if seen is None else seen
    real = os.path.realpath(path)
    if real in seen:
        return set()
    seen.add(real)
    return _tasks_tags(_yaml(path, list), os.path.dirname(path), seen)


def _tasks_tags(tasks: Any, base: str, seen: set) -> set[str]:
    """The tags of a task list: each task's and block's own, and those of the files and roles imported statically.
    A dynamic include (include_tasks, include_role) counts with its own tags only: what it includes is decided
    while the play runs, and ansible-playbook --list-tags does not list it either."""
    tags = set()
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        tags |= _tag_values(task.get("tags"))
        for key in _BLOCK_TASK_LISTS:
            tags |= _tasks_tags(task.get(key), base, seen)
        for key in _IMPORT_TASKS:
            target = task.get(key)
            target = target.get("file") if isinstance(target, dict) else target
            if target and "{{" not in str(target):
                tags |= _file_tags(os.path.join(base, str(target)), seen)
        for key in _IMPORT_ROLE:
            if isinstance(task.get(key), dict):
                tags |= _role_tags(task[key].get("name"), task[key].get("tasks_from"), seen)
    return tags


def playbook_tags(path: str, seen: set | None = None) -> set[str]:
    """The tags of the playbook at ``path``, as ``ansible-playbook --list-tags`` lists them, read from its YAML: the
    tags of its plays, of their roles, tasks and blocks, and of the playbooks, task files and roles of this
    collection they import statically. Without Ansible's run-time: a tag written as a template is kept as written."""
    seen = set() if seen is None else seen
    tags = set()
    base = os.path.dirname(path)
    for play in _yaml(path, list):
        if not isinstance(play, dict):
            continue
        tags |= _tag_values(play.get("tags"))
        for key in _IMPORT_PLAYBOOK:
            if play.get(key) and "{{" not in str(play[key]):
                tags |= playbook_tags(os.path.join(base, str(play[key])), seen)
        for role in play.get("roles") or []:
            entry = role if isinstance(role, dict) else {"role": role}
            tags |= _tag_values(entry.get("tags")) | _role_tags(entry.get("role") or entry.get("name"), seen=seen)
        for key in _PLAY_TASK_LISTS:
            tags |= _tasks_tags(play.get(key), base, seen)
    return tags


def unknown_tags_problem(options: "PlaybookOptions", playbook: str) -> str | None:
    """What is wrong with the ``--tags``/``--skip-tags`` of ``options`` for ``playbook``: the first tag it does not
    have (Ansible would run nothing of it, or leave out nothing), with the tags it has; None when all are known."""
    wanted = [("--tags", tag) for value in options.tags for tag in _tag_values(value)]
    wanted += [("--skip-tags", tag) for value in options.skip_tags for tag in _tag_values(value)]
    if not wanted:
        return None
    known = playbook_tags(playbook)
    for option, tag in wanted:
        if tag not in known and tag not in ANSIBLE_SPECIAL_TAGS:
            return "%s %s: %s has no such tag; its tags: %s (and Ansible's %s)" % (
                option, tag, os.path.basename(playbook), ", ".join(sorted(known)) or "none",
                ", ".join(ANSIBLE_SPECIAL_TAGS))
    return None


@dataclass
class PlaybookOptions:
    """The ansible-playbook options of one run, as the user gave them (``extra_vars`` already checked)."""

    extra_vars: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    skip_tags: list[str] = field(default_factory=list)
    check: bool = False
    level: str | None = None
    slurm_drain: bool = False
    # --ee IMAGE: the playbook runs in that execution environment (cli/ee.py), with these paths mounted too
    ee: str | None = None
    ee_mounts: list[str] = field(default_factory=list)
    # the cost view's reference job (the extra var gpufleet_reference_job), already checked
    reference_job: dict | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "PlaybookOptions":
        """The options of parsed arguments; OptionsError for an ``-e`` or ``--reference-job`` that cannot be used."""
        return cls(extra_vars=extra_vars_arguments(getattr(args, "extra_vars", None) or []),
                   tags=list(getattr(args, "tags", None) or []), skip_tags=list(getattr(args, "skip_tags", None) or []),
                   check=bool(getattr(args, "check", False)), level=getattr(args, "level", None),
                   slurm_drain=bool(getattr(args, "slurm_drain", False)), ee=getattr(args, "ee", None),
                   ee_mounts=list(getattr(args, "ee_mounts", None) or []),
                   reference_job=reference_job_option(getattr(args, "reference_job", None)))

    def cmdline(self) -> list[str]:
        """ansible-playbook arguments that come before the CLI's own ``-e``: the user's extra vars, ``--check``."""
        arguments = []
        for value in self.extra_vars:
            arguments += ["-e", value]
        if self.check:
            arguments.append("--check")
        return arguments

    def extravars(self) -> dict[str, Any]:
        """The CLI's own extra vars these options add (``gpufleet_level``, ``gpufleet_reference_job``)."""
        extravars: dict[str, Any] = {LEVEL_VAR: self.level} if self.level else {}
        if self.slurm_drain:
            extravars[SLURM_DRAIN_VAR] = True
        if self.reference_job is not None:
            extravars[REFERENCE_JOB_VAR] = self.reference_job
        return extravars

    def runner_kwargs(self) -> dict[str, Any]:
        """The ``ansible_runner.run`` arguments for these options (``cmdline`` a string runner splits with shlex)."""
        kwargs: dict[str, Any] = {}
        if self.cmdline():
            kwargs["cmdline"] = shlex.join(self.cmdline())
        if self.tags:
            kwargs["tags"] = ",".join(self.tags)
        if self.skip_tags:
            kwargs["skip_tags"] = ",".join(self.skip_tags)
        return kwargs

    def arguments(self) -> list[str]:
        """These options as the ``gpufleet`` command line takes them (for the resume command)."""
        arguments = []
        if self.level:
            arguments += ["--level", self.level]
        if self.slurm_drain:
            arguments.append("--slurm-drain")
        if self.ee:
            arguments += ["--ee", self.ee]
        for path in self.ee_mounts:
            arguments += ["--ee-mount", path]
        if self.reference_job is not None:
            arguments += ["--reference-job", json.dumps(self.reference_job, sort_keys=True)]
        for value in self.extra_vars:
            arguments += ["-e", value]
        for value in self.tags:
            arguments += ["--tags", value]
        for value in self.skip_tags:
            arguments += ["--skip-tags", value]
        if self.check:
            arguments.append("--check")
        return arguments


def add_playbook_arguments(parser: argparse.ArgumentParser) -> None:
    """``-e``, ``--tags``, ``--skip-tags``, ``--check`` and ``--level``, as ansible-playbook takes the first four."""
    parser.add_argument("--level", choices=LEVELS,
                        help="how much is measured: quick (facts only), standard, full (+ burn-in); "
                             "passed to the playbook as the extra var %s (default: the playbook's)" % LEVEL_VAR)
    parser.add_argument("-e", "--extra-vars", action="append", metavar="VARS", dest="extra_vars",
                        help="extra variables for the playbook, as ansible-playbook -e takes them (repeatable): "
                             "key=value, a JSON or YAML mapping, or @FILE; --out, --profile and --level win over "
                             "the same variable here")
    parser.add_argument("--tags", action="append", metavar="TAGS",
                        help="only the playbook's plays and tasks tagged so (facts, benchmarks, "
                             "health_after_benchmarks, burn_in, health_after_burn_in, report; repeatable; a tag the "
                             "playbook does not have is refused)")
    parser.add_argument("--skip-tags", action="append", metavar="TAGS",
                        help="leave out the plays and tasks tagged so (repeatable; a tag the playbook does not have "
                             "is refused)")
    parser.add_argument("--check", action="store_true",
                        help="ansible-playbook --check: modules that support it change nothing on the nodes")
    parser.add_argument("--slurm-drain", action="store_true",
                        help="drain each REJECT node in Slurm (reason 'gpufleet: <first reason>'), resume a node "
                             "gpufleet drained once it passes, leave an administrator's drain alone (the extra var "
                             "%s; docs/slurm.md)" % SLURM_DRAIN_VAR)
    parser.add_argument("--ee", metavar="IMAGE",
                        help="run the playbook in this execution environment image (execution-environment.yml, "
                             "make ee) with podman or docker: ansible-runner's process isolation, the results "
                             "directory, the inventories' folders and ~/.ssh mounted at their own paths")
    parser.add_argument("--ee-mount", action="append", metavar="PATH", dest="ee_mounts",
                        help="with --ee: another path the run reads (keys, claims files), mounted read-only at the "
                             "same path (repeatable)")
    add_reference_job_argument(parser)


def program() -> list[str]:
    """How this ``gpufleet`` was started, for a command line to paste: ``gpufleet`` when that name on
    PATH is this very script, else its path; ``python -m gpufleet.cli.main`` when run as a module."""
    started = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if os.path.basename(started) != "gpufleet":
        return [sys.executable, "-m", "gpufleet.cli.main"]
    found = shutil.which("gpufleet")
    if found and os.path.realpath(found) == os.path.realpath(started):
        return ["gpufleet"]
    return [os.path.abspath(started)]


def resume_command(command: list[str], results_dir: str) -> str:
    """The shell line that resumes a run: ``command`` (the program, the subcommand and the run's own
    options, paths absolute) with ``--out RESULTS_DIR``, which the playbook resumes (hosts whose
    facts are recorded are not gathered again)."""
    return shlex.join(list(command) + ["--out", results_dir])

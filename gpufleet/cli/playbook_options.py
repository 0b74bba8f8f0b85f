# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``gpufleet validate`` and ``gpufleet demo`` pass on to ansible-playbook as ansible-playbook takes it:
``-e/--extra-vars`` (repeatable: ``key=value``, a JSON or YAML string, or ``@file``), ``--tags``,
``--skip-tags``, ``--check``, ``--level`` (the extra var ``gpufleet_level``) and ``--reference-job`` (the extra var
``gpufleet_reference_job``, read by :func:`reference_job_option`, which ``gpufleet report --reference-job`` uses
too); and the command line that resumes an interrupted run.

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

from gpufleet.report.cost import ReferenceJobError, validate_job

LEVELS = ("quick", "standard", "full")
LEVEL_VAR = "gpufleet_level"
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
        job = json.loads(text)
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


@dataclass
class PlaybookOptions:
    """The ansible-playbook options of one run, as the user gave them (``extra_vars`` already checked)."""

    extra_vars: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    skip_tags: list[str] = field(default_factory=list)
    check: bool = False
    level: str | None = None
    # the cost view's reference job (the extra var gpufleet_reference_job), already checked
    reference_job: dict | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "PlaybookOptions":
        """The options of parsed arguments; OptionsError for an ``-e`` or ``--reference-job`` that cannot be used."""
        return cls(extra_vars=extra_vars_arguments(getattr(args, "extra_vars", None) or []),
                   tags=list(getattr(args, "tags", None) or []), skip_tags=list(getattr(args, "skip_tags", None) or []),
                   check=bool(getattr(args, "check", False)), level=getattr(args, "level", None),
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
                        help="only the playbook's plays and tasks tagged so "
                             "(facts, benchmarks, burn_in, report; repeatable)")
    parser.add_argument("--skip-tags", action="append", metavar="TAGS",
                        help="leave out the plays and tasks tagged so (repeatable)")
    parser.add_argument("--check", action="store_true",
                        help="ansible-playbook --check: modules that support it change nothing on the nodes")
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

"""The exit codes of a validation run: one table for both entry points.

``ansible-playbook playbooks/validate_cluster.yml`` and ``gpufleet validate`` (and ``gpufleet demo``) exit with the
same code for the same outcome. ansible-playbook fixes some codes itself, before or around gpufleet's code: 2 when its
command line is refused (argparse), 4 when it cannot parse a playbook or inventory, 5 an invalid option, 99 after
Ctrl-C, 250 an unexpected error, 143 when SIGTERM ends it. The table keeps those meanings, and gives the verdicts codes
Ansible never uses. The validation playbook records its code as it goes (``set_stats`` :data:`STATS_KEY`): 1 when it
starts, 64 when its preflight refuses an input, the verdicts' code once the report is written; the callback
``gpufleet.acceptance.exit_code`` (plugins/callback/exit_code.py, enabled by the collection's ansible.cfg) makes
ansible-playbook exit with it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gpufleet.checks.model import ACCEPTED

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REJECTED = 3
EXIT_UNREACHABLE = 4
EXIT_INCOMPLETE = 6
EXIT_INPUT = 64  # sysexits EX_USAGE: the input (not the command line) was refused
EXIT_INTERRUPTED = 99  # ansible-playbook's own code after Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM

# The custom statistic (ansible.builtin.set_stats) in which the playbook records its code for the callback.
STATS_KEY = "acceptance_exit_code"


class ExitCode(NamedTuple):
    """One row of the table: the code, when it is given, and what to do about it."""

    code: int
    meaning: str
    next_step: str


TABLE = (
    ExitCode(EXIT_OK, "every node accepted (ACCEPT or ACCEPT WITH WARNINGS)", "use the nodes"),
    ExitCode(EXIT_FAILED, "the run failed on the controller (a full or unwritable results directory, an Ansible "
             "error): not every node was judged; the message says why and what is kept", "fix what it names, resume"),
    ExitCode(EXIT_USAGE, "the command line was refused (an unknown option, a bad option value)", "fix the command"),
    ExitCode(EXIT_REJECTED, "some node REJECT: a measured fault (whatever the other nodes)",
             "dispute it with `gpufleet bundle DIR NODE`; retest after the fix with `gpufleet validate "
             "--retest-failed DIR`"),
    ExitCode(EXIT_UNREACHABLE, "some node UNREACHABLE, none rejected", "check its ssh; `--retest-failed DIR`"),
    ExitCode(EXIT_INCOMPLETE, "some node INCOMPLETE (required evidence not measured), none rejected or unreachable",
             "provision what is missing (`ansible-playbook gpufleet.acceptance.provision`); `--retest-failed DIR`"),
    ExitCode(EXIT_INPUT, "an input was refused before anything ran: a claim, profile, level, inventory or results "
             "directory (the message names the file, host and fix)", "fix the input named"),
    ExitCode(EXIT_INTERRUPTED, "interrupted by Ctrl-C (SIGINT)", "resume with the command printed"),
    ExitCode(EXIT_TERMINATED, "ended by SIGTERM", "resume with the command printed"),
)
CODES = tuple(row.code for row in TABLE)
VERDICT_CODES = (EXIT_OK, EXIT_REJECTED, EXIT_UNREACHABLE, EXIT_INCOMPLETE)


def verdict_exit_code(verdicts: Mapping[str, str | None]) -> int:
    """The code of a judged run from its nodes' verdicts: REJECT first, then UNREACHABLE, then INCOMPLETE or a node
    never judged (None); EXIT_OK when every node is accepted. No node at all is EXIT_INPUT (nothing to judge)."""
    values = list(verdicts.values())
    if not values:
        return EXIT_INPUT
    if "REJECT" in values:
        return EXIT_REJECTED
    if "UNREACHABLE" in values:
        return EXIT_UNREACHABLE
    if all(value in ACCEPTED for value in values):
        return EXIT_OK
    return EXIT_INCOMPLETE


def recorded_exit_code(recorded: object) -> int:
    """The exit code a validation run recorded (``set_stats`` :data:`STATS_KEY`, a string once templated), as
    ansible-playbook exits with it (plugins/callback/exit_code.py); anything not in the table is EXIT_FAILED."""
    try:
        code = int(str(recorded))
    except ValueError:
        return EXIT_FAILED
    return code if code in CODES else EXIT_FAILED


def table_text(rows: Iterable[ExitCode] = TABLE, width: int = 100) -> str:
    """The table as lines for ``--help``, wrapped at ``width``."""
    lines = []
    for row in rows:
        lines += textwrap.wrap(row.meaning, width=width, initial_indent="  %3d  " % row.code,
                               subsequent_indent=" " * 7)
    return "\n".join(lines)

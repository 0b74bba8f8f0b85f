# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test that needs a system program fails when it is missing, naming the program, its Debian package
and the set-up command: a missing program is a defect of the machine's set-up, not a reason to skip.

The program -> package table is the one in system_packages.sh (read from it, so the list stays one).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Dict, NoReturn, Sequence

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "system_packages.sh")
SETUP_COMMAND = "make system-packages"


def program_packages(script: str = SCRIPT) -> Dict[str, str]:
    """``{program: Debian package}`` from the ``SYSTEM_PROGRAMS=( program:package ... )`` table of ``script``."""
    with open(script, encoding="utf-8") as handle:
        text = handle.read()
    table = re.search(r"^SYSTEM_PROGRAMS=\(\n(.*?)^\)", text, re.MULTILINE | re.DOTALL)
    if table is None:
        raise ValueError("%s: no SYSTEM_PROGRAMS=( ... ) table" % script)
    entries = [line.strip() for line in table.group(1).splitlines() if line.strip()]
    return dict(entry.split(":", 1) for entry in entries)


def missing_programs_message(programs: Sequence[str], needed_for: str) -> str:
    """Why the test cannot run and what installs ``programs`` (names from the script's table)."""
    table = program_packages()
    packages = list(dict.fromkeys(table[program] for program in programs))
    named = ", ".join("%s (Debian package %s)" % (program, table[program]) for program in programs)
    return ("missing: %s: %s. A missing program is a set-up defect, not a skip: run `%s` (as root it installs "
            "the packages; otherwise it prints the command: sudo apt-get install -y --no-install-recommends %s)"
            % (named, needed_for, SETUP_COMMAND, " ".join(packages)))


def fail_missing_programs(programs: Sequence[str], needed_for: str) -> NoReturn:
    pytest.fail(missing_programs_message(programs, needed_for), pytrace=False)


def require_programs(programs: Sequence[str], needed_for: str) -> None:
    """Fail the test when one of ``programs`` is not on PATH (sshd: not at /usr/sbin/sshd, where the fleet
    starts it)."""
    missing = [program for program in programs
               if not (os.path.exists("/usr/sbin/sshd") if program == "sshd" else shutil.which(program))]
    if missing:
        fail_missing_programs(missing, needed_for)

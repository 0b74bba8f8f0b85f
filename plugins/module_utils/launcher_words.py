# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a job launcher prints, as patterns: the one table of it.

Two readers share it. On the node, ``bench_process.classify`` names a finished run's outcome from it
(``launcher_error``, ``missing_binary``). On the controller, the nccl-tests parser (``gpufleet/parsers/nccl_tests.py``)
tells a launcher's line from a rank's with it; the library loads this file by its path
(``gpufleet.collection.module_utils``), so it imports nothing but ``re``.

The launchers: Open MPI (ORTE before 5, PRRTE from 5), Slurm's srun, MPICH's hydra, and the ssh they start ranks with.
"""

from __future__ import annotations

import re

# The launcher could not start the job (a run's outcome ``launcher_error``).
LAUNCHER_PATTERNS = (
    re.compile(r"There are not enough slots available"),
    re.compile(r"not enough slots", re.IGNORECASE),
    re.compile(r"ORTE was unable"),
    re.compile(r"ORTE does not know how to route"),
    re.compile(r"ORTE has lost communication"),
    re.compile(r"An ORTE daemon has unexpectedly failed"),
    re.compile(r"PRTE has lost communication|PRTE was unable"),
    re.compile(r"mpirun was unable to start the specified application"),
    re.compile(r"A request was made to bind to that would result in binding more"),
    # srun --immediate and a drained, down or reserved node: this line, before "Unable to allocate resources"
    re.compile(r"srun: Required node not available"),
    re.compile(r"srun: error: (Unable to|Invalid|.*allocation|.*Job step creation)"),
    re.compile(r"srun: error: .*(Connection refused|Unable to resolve|invalid partition)", re.IGNORECASE),
    re.compile(r"HYDU_create_process|HYD_pmcd_pmiserv|\[mpiexec@.*\] (HYDT|HYD)_"),
    re.compile(r"ssh: connect to host .*"),
    re.compile(r"ssh: Could not resolve hostname"),
    re.compile(r"Host key verification failed"),
    re.compile(r"Permission denied \(publickey"),
)

# The launcher (or the shell it ran) found no program to start (a run's outcome ``missing_binary``).
MISSING_PATTERNS = (
    re.compile(r"was unable to find the specified executable"),
    re.compile(r"could not access or execute an executable"),
    re.compile(r"could not find an executable"),
    re.compile(r"srun: error: .*execve\(\): .*No such file or directory"),
    re.compile(r": command not found$"),
    re.compile(r"execvp error on file .*\(No such file or directory\)"),
)

# The launcher's report that the job it ran failed (a rank died, aborted or was never found).
LAUNCHER_FAILURE_PATTERNS = (
    re.compile(r"(?:mpirun|mpiexec|orterun|prterun) (?:noticed|detected|was unable|has exited)"),
    re.compile(r"Primary job\s+terminated"),
    re.compile(r"ORTE (?:was unable|has lost)|PRTE has lost"),
    re.compile(r"MPI_ABORT"),
    re.compile(r"\b(?:srun|slurmstepd|salloc|sbatch):\s*error\b", re.IGNORECASE),
    re.compile(r"command not found"),
)

# The launcher's other words about a job: never a rank's.
LAUNCHER_REPORT_PATTERNS = (
    re.compile(r"Per user-direction"),
    re.compile(r"(?:mpirun|mpiexec|orterun|prterun)\b", re.IGNORECASE),
    re.compile(r"ORTE does not know"),
    re.compile(r"\btasks? [\d,\[\]-]+: (?:Exited with exit code|Killed|Terminated)", re.IGNORECASE),
    re.compile(r"^ssh: "),
)

# Any line a launcher wrote: the parser's test of whether a failure line is the launcher's or a rank's.
LAUNCHER_LINE_PATTERNS = LAUNCHER_PATTERNS + MISSING_PATTERNS + LAUNCHER_FAILURE_PATTERNS + LAUNCHER_REPORT_PATTERNS

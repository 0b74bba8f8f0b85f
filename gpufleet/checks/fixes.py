"""What fixes an unverified item: one table from the words of its reason to the operator's fix.

An INCOMPLETE node lists each required item it could not verify with why (gpufleet/checks/evidence.py). The why
names the cause in the checks' own words ("gpu facts not gathered", "nic facts failed: ... exited 127", a tool that
timed out in the fact phase, the benchmark preflight's "provision first"); this table turns each cause into what to
do before the retest. The first row whose pattern the reason matches gives the fix; a reason no row knows gets the
last, generic one. The report (folded node details), results.json (``coverage.items[].fix``) and the CLI's next step
read the fix from here only.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Pattern, Tuple

PROVISION = "ansible-playbook -i INVENTORY gpufleet.acceptance.provision"

# (pattern of the reason, fix). ``{group}`` in a fix is the pattern's ``group`` (a fact group's name).
FIXES: Tuple[Tuple[Pattern[str], str], ...] = (
    # the benchmark preflight's record of a missing tool (playbooks/benchmark_tasks/preflight.yml)
    (re.compile(r"provision first"), "install the tools it lacks: %s" % PROVISION),
    # a tool the fact phase stopped (gpufleet/facts/raw.py is_overrun): the node's tool hangs, or the budget is small
    (re.compile(r"timed out after|budget of [0-9.]+ s ran out"),
     "find why the tool hangs on the node (its raw output in the results directory), or raise "
     "gpufleet_tool_timeout / gpufleet_fact_phase_timeout"),
    # the shell's "not found" (exit 127) or a missing device file: the tool or the device is absent
    (re.compile(r"(?P<group>\w+) facts failed: .*(exited 127|not found|[Nn]o such file)"),
     "install the {group} tools the node lacks (%s), or have the seller fix the device it names" % PROVISION),
    (re.compile(r"(?P<group>\w+) facts failed"),
     "read the {group} tool's output in the results directory (raw/NODE/{group}/) and have the seller fix what it "
     "names"),
    # the group was left out of this run (gpufleet_fact_groups) or its phase never reached the node
    (re.compile(r"(?P<group>\w+) facts not gathered"), "gather the {group} facts: gpufleet_fact_groups must include "
     "{group}"),
    (re.compile(r"not run or not recorded|was not run"), "run it: a level that measures it (--level standard)"),
    (re.compile(r"nothing was judged"), "gather facts the checks can judge (gpufleet_fact_groups)"),
)
GENERIC_FIX = "remove the cause its reason names"

# (pattern of a launcher's words, fix): a benchmark whose launcher could not start the job (outcome launcher_error,
# plugins/module_utils/launcher_words.py LAUNCHER_PATTERNS). Slurm 22.05's srun words as it printed them on the test
# Slurm (tests/sshfleet/slurm.sh); the fix after the launcher's own words in the benchmark check's message.
LAUNCHER_FIXES: Tuple[Tuple[Pattern[str], str], ...] = (
    (re.compile(r"Required node not available|Requested nodes are busy|ReqNodeNotAvail"),
     "a node of the run is drained, down or reserved in Slurm (sinfo -N -l): resume it once its cause is fixed, "
     "or leave it out (--limit)"),
    (re.compile(r"Invalid node name specified"),
     "a node is not known to Slurm by that name (sinfo -N): set gpufleet_slurm_node, or provision again (role "
     "mpi_fabric records each node's Slurm name)"),
    (re.compile(r"PMI|pmix|pmi2", re.IGNORECASE),
     "srun's MPI plugin is not the one Open MPI was built with: mpi_fabric_srun_mpi pmix (Debian's Open MPI has "
     "PMIx and no PMI-1/2), or the cluster's MpiDefault"),
    (re.compile(r"Unable to contact slurm controller|Connection refused|Unable to resolve"),
     "the node reaches no slurmctld: its SLURM_CONF (or /etc/slurm/slurm.conf) and slurmctld"),
    (re.compile(r"^ssh: |Host key verification failed|Permission denied \(publickey"),
     "the launcher's ssh between the nodes fails: provision again (role mpi_fabric writes its keys and known_hosts)"),
    (re.compile(r"not enough slots", re.IGNORECASE),
     "more ranks than the hostfile's slots: gpufleet_gpus_per_node, or provision again"),
)


def launcher_fix(words: str) -> Optional[str]:
    """The fix of a launcher's words (:data:`LAUNCHER_FIXES`), or None when no row knows them."""
    return next((fix for pattern, fix in LAUNCHER_FIXES if pattern.search(words)), None)


def fix_for(reason: str) -> str:
    """The fix of one unverified item's ``reason`` (the first row of :data:`FIXES` it matches)."""
    for pattern, fix in FIXES:
        found = pattern.search(reason)
        if found:
            groups = found.groupdict()
            return fix.format(group=groups.get("group") or "") if groups else fix
    return GENERIC_FIX


def distinct_fixes(reasons: Iterable[str]) -> List[str]:
    """The fixes of several reasons, each once, in the order of the reasons."""
    return list(dict.fromkeys(fix_for(str(reason)) for reason in reasons))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet's Slurm health check program (slurm.conf ``HealthCheckProgram``): the node's last verdict as a drain.

slurmd runs it as root every ``HealthCheckInterval`` seconds, with only ``SLURMD_NODENAME`` and ``PWD`` set. It reads
nothing but the verdict file ``gpufleet validate --slurm-drain`` wrote on this node where the controller reached no
``scontrol`` (default /var/lib/gpufleet/slurm-verdict.json; gpufleet/results/slurm_drain.py ``verdict_file``), asks
``sinfo`` for this node's own state and reason, and then, by LBNL NHC's rules (gpufleet/results/slurm_drain.py
``plan_drains``, the same rules, tested on the same cases):

- a REJECT drains the node with the file's reason (``gpufleet: <first reason>``) unless it is already so drained;
- an ACCEPT resumes the node only when its reason carries gpufleet's prefix (a drain gpufleet set);
- a node with any other reason (an administrator's drain, "Not responding") is left as it is;
- no verdict file, or one it cannot read, changes nothing.

Python 3.8+ standard library only (a rented node has the OS Python); each command is bounded (``--timeout``). The
Slurm configuration is named explicitly (``SLURM_CONF``, else /etc/slurm/slurm.conf), so no Slurm command looks one up
over DNS. Exit 0, or 1 with one line on stderr when a command failed (slurmd logs it). ``--dry-run`` prints the
command instead of running it.
"""

import argparse
import json
import os
import socket
import subprocess
import sys

VERDICT_FILE = "/var/lib/gpufleet/slurm-verdict.json"
SLURM_CONF = "/etc/slurm/slurm.conf"
SCHEMA = "gpufleet.slurm-verdict/v1"


def run(argv, timeout):
    """(rc, output); rc None when it could not start or ran past ``timeout`` seconds."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    return proc.returncode, proc.stdout.strip()


def read_verdict(path):
    """The verdict file's content, or None (absent, unreadable, not ours)."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            content = json.load(handle)
    except (OSError, ValueError):
        return None
    return content if isinstance(content, dict) and content.get("schema") == SCHEMA else None


def node_state(sinfo, node, timeout):
    """(state, reason or None) of this node as sinfo prints it, or None."""
    rc, out = run([sinfo, "--noheader", "--Node", "--nodes=" + node,
                   "--Format=NodeList:0|,StateLong:0|,Reason:0"], timeout)
    if rc != 0:
        return None
    for line in out.splitlines():
        parts = line.split("|", 2)
        if len(parts) == 3 and parts[0].strip() == node:
            reason = parts[2].strip()
            return parts[1].strip().lower(), (None if reason in ("", "none") else reason)
    return None


def decide(verdict, state, reason):
    """'drain', 'resume' or None for this node: the rules of the module docstring."""
    prefix = str(verdict.get("prefix") or "gpufleet: ")
    ours = bool(reason) and reason.startswith(prefix)
    if reason and not ours:
        return None
    if verdict.get("drain"):
        return None if ("drain" in state and reason == verdict.get("reason")) else "drain"
    if verdict.get("resume") and "drain" in state and ours:
        return "resume"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--verdict-file", default=VERDICT_FILE)
    parser.add_argument("--scontrol", default="scontrol")
    parser.add_argument("--sinfo", default="sinfo")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if not os.environ.get("SLURM_CONF") and os.path.exists(SLURM_CONF):
        os.environ["SLURM_CONF"] = SLURM_CONF
    verdict = read_verdict(args.verdict_file)
    if verdict is None:
        return 0
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    found = node_state(args.sinfo, node, args.timeout)
    if found is None:
        sys.stderr.write("gpufleet-slurm-health: sinfo knows no node %s\n" % node)
        return 1
    action = decide(verdict, *found)
    if action is None:
        return 0
    command = [args.scontrol, "update", "NodeName=" + node]
    command += ["State=DRAIN", "Reason=" + str(verdict.get("reason"))] if action == "drain" else ["State=RESUME"]
    if args.dry_run:
        print(" ".join(command))
        return 0
    rc, out = run(command, args.timeout)
    if rc != 0:
        sys.stderr.write("gpufleet-slurm-health: %s: %s\n" % (" ".join(command), out or "exit %s" % rc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet demo``: build the replayed simulated fleet and validate it.

The fleet (``inventories/simulated/``, replayed by ``tests/replay/build_fleet.py`` from the
recordings in ``tests/fixtures/``) comes with the collection this code runs from: the source
checkout, or the copy an installed wheel carries (``setup.py``). From the checkout the fleet is
built and judged inside it, as ``make demo`` always did; from an installed wheel (or with
``--workdir``) the demo inventory is copied into a work directory (default ``./gpufleet-demo``),
whose ``tests/output/simulated`` gets the built fleet (where the inventory's host variables look
for it) and ``results/<UTC timestamp>`` the results. The command says so clearly when the collection
has no demo fleet. The demo fleet is meant to contain rejected nodes, so the exit code is 0 when
the run worked (whatever the verdicts) and 1 when it failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from gpufleet.cli import validate
from gpufleet.cli.common import EXIT_FAILED, EXIT_OK, JsonOutput, Subcommands, add_output_arguments, json_output, say
from gpufleet.cli.playbook_options import OptionsError, PlaybookOptions, add_playbook_arguments, program
from gpufleet.collection import collection_root, is_bundled
from gpufleet.results.store import default_run_id

BUILD_FLEET = os.path.join("tests", "replay", "build_fleet.py")
INVENTORY = os.path.join("inventories", "simulated", "hosts.yml")
FLEET_OUT = os.path.join("tests", "output", "simulated")  # where inventories/simulated/hosts.yml looks for the built nodes
RESULTS_OUT = os.path.join("tests", "output", "demo")
# An installed wheel's collection copy is no place to write: the demo runs in a work directory instead.
DEFAULT_WORKDIR = "gpufleet-demo"
WORKDIR_RESULTS = "results"


def checkout_root(root: str | None = None) -> str | None:
    """The source checkout this gpufleet runs from, or None when it is an installed collection without the demo fleet."""
    root = root or collection_root()
    if os.path.isfile(os.path.join(root, BUILD_FLEET)) and os.path.isfile(os.path.join(root, INVENTORY)):
        return root
    return None


def copy_inventory(root: str, workdir: str) -> str:
    """Copy the demo inventory of ``root`` into ``workdir`` (an earlier copy's files overwritten); its hosts.yml."""
    source = os.path.dirname(os.path.join(root, INVENTORY))
    target = os.path.join(workdir, os.path.dirname(INVENTORY))
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return os.path.join(workdir, INVENTORY)


def demo_command(args: argparse.Namespace, options: PlaybookOptions, output: JsonOutput | None) -> list[str]:
    """``gpufleet demo`` with the arguments of this run, paths absolute, without ``--out``: the command
    that resumes it (``validate.resume_command``)."""
    command = program() + ["demo"]
    for flag, value in (("--limit", args.limit), ("--profile", args.profile), ("--forks", args.forks),
                        ("--workdir", os.path.abspath(args.workdir) if args.workdir else None)):
        if value:
            command += [flag, str(value)]
    return command + options.arguments() + validate.output_arguments(output)


def cmd_demo(args: argparse.Namespace) -> int:
    output = json_output(args, "demo")
    if output is None:
        return EXIT_FAILED
    try:
        options = PlaybookOptions.from_args(args)
    except OptionsError as exc:
        say("gpufleet demo: %s" % exc)
        return EXIT_FAILED
    root = checkout_root()
    if root is not None:
        root = os.path.realpath(root)  # the checkout itself, not its collections/ link (for the paths shown)
    if root is None:
        say("gpufleet demo: the demo fleet lives in the gpufleet source checkout or an installed gpufleet wheel "
            "(%s, %s), and this gpufleet runs from %s, which has neither: clone the repository and run `make demo` "
            "there, or `pip install` the gpufleet wheel" % (BUILD_FLEET, INVENTORY, collection_root()))
        return EXIT_FAILED
    workdir = args.workdir or (DEFAULT_WORKDIR if is_bundled() else None)
    if workdir is None:  # the source checkout: built and judged inside it
        base, inventory, results_base = root, os.path.join(root, INVENTORY), os.path.join(root, RESULTS_OUT)
    else:
        base = os.path.abspath(workdir)
        try:
            inventory = copy_inventory(root, base)
        except OSError as exc:
            say("gpufleet demo: cannot copy the demo inventory into %s: %s" % (base, exc))
            return EXIT_FAILED
        results_base = os.path.join(base, WORKDIR_RESULTS)
        say("gpufleet demo: working in %s (the demo inventory copied to %s)" % (base, os.path.dirname(inventory)))
    fleet_out = os.path.join(base, FLEET_OUT)
    build = [sys.executable, os.path.join(root, BUILD_FLEET), "--inventory", inventory, "--out", fleet_out]
    say("gpufleet demo: building the replayed fleet in %s" % fleet_out)
    proc = subprocess.run(build, cwd=base, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        say("gpufleet demo: building the replayed fleet failed (exit %d):" % proc.returncode)
        say((proc.stdout + proc.stderr).strip()[-4000:])
        return EXIT_FAILED
    out = args.out or os.path.join(results_base, default_run_id())
    code = validate.validate([inventory], limit=args.limit, profile=args.profile, out=out, forks=args.forks,
                             command="demo", output=output, options=options,
                             resume=demo_command(args, options, output), force=args.force)
    if code > 128:  # interrupted before the verdict: the shell's code for the signal
        return code
    return EXIT_FAILED if code == EXIT_FAILED else EXIT_OK


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    """``gpufleet demo``."""
    parser = commands.add_parser(
        "demo",
        help="validate the replayed simulated fleet (what `make demo` runs)",
        description="Build the replayed fleet (tests/replay/build_fleet.py) and run `gpufleet validate` on "
                    "inventories/simulated/hosts.yml: inside the source checkout, or, from an installed wheel or with "
                    "--workdir, on a copy of the inventory in a work directory. "
                    "Exit 0 when the run worked (the demo fleet has rejected nodes on purpose), 1 when it failed.",
    )
    parser.add_argument("--limit", metavar="HOSTS", help="only these simulated hosts")
    parser.add_argument("--profile", metavar="NAME", help="judge every node against this profile")
    parser.add_argument("--out", metavar="DIR",
                        help="results directory (default: tests/output/demo/<UTC timestamp> in the checkout, "
                             "WORKDIR/results/<UTC timestamp> in a work directory); refused as validate's --out is")
    parser.add_argument("--force", action="store_true",
                        help="write into --out even when it is a symbolic link or a directory of other files")
    parser.add_argument("--workdir", metavar="DIR",
                        help="copy the demo inventory here and build the fleet in DIR/tests/output/simulated "
                             "(default: ./%s from an installed wheel; none from the source checkout, "
                             "which is used in place)" % DEFAULT_WORKDIR)
    parser.add_argument("--forks", type=int, metavar="N", help="hosts Ansible works on at once")
    add_playbook_arguments(parser)
    add_output_arguments(parser, "\"values(hosts)[?verdict=='REJECT'].host\" (the rejected nodes)")
    parser.set_defaults(func=cmd_demo)
    return parser

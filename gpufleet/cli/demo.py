# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet demo``: build the replayed simulated fleet of the source checkout and validate it.

The fleet (``inventories/simulated/``, replayed by ``tests/replay/build_fleet.py``) lives in the
repository checkout, not in an installed collection: the command finds the checkout as the
collection root this code runs from and says so clearly when that has no ``tests/``. The demo
fleet is meant to contain rejected nodes, so the exit code is 0 when the run worked (whatever the
verdicts) and 1 when it failed.
"""

from __future__ import annotations

import os
import subprocess
import sys

from gpufleet.cli import validate
from gpufleet.cli.common import EXIT_FAILED, EXIT_OK, say
from gpufleet.collection import collection_root
from gpufleet.results.store import default_run_id

BUILD_FLEET = os.path.join("tests", "replay", "build_fleet.py")
INVENTORY = os.path.join("inventories", "simulated", "hosts.yml")
FLEET_OUT = os.path.join("tests", "output", "simulated")  # where inventories/simulated/hosts.yml looks for the built nodes
RESULTS_OUT = os.path.join("tests", "output", "demo")


def checkout_root(root=None):
    """The source checkout this gpufleet runs from, or None when it is an installed collection without the demo fleet."""
    root = root or collection_root()
    if os.path.isfile(os.path.join(root, BUILD_FLEET)) and os.path.isfile(os.path.join(root, INVENTORY)):
        return root
    return None


def cmd_demo(args):
    root = checkout_root()
    if root is not None:
        root = os.path.realpath(root)  # the checkout itself, not its collections/ link (for the paths shown)
    if root is None:
        say("gpufleet demo: the demo fleet lives in the gpufleet source checkout (%s, %s), and this gpufleet runs from %s, "
            "which has neither: clone the repository and run `make demo` there" % (BUILD_FLEET, INVENTORY, collection_root()))
        return EXIT_FAILED
    build = [sys.executable, os.path.join(root, BUILD_FLEET), "--inventory", os.path.join(root, INVENTORY), "--out", os.path.join(root, FLEET_OUT)]
    say("gpufleet demo: building the replayed fleet in %s" % os.path.join(root, FLEET_OUT))
    proc = subprocess.run(build, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        say("gpufleet demo: building the replayed fleet failed (exit %d):" % proc.returncode)
        say((proc.stdout + proc.stderr).strip()[-4000:])
        return EXIT_FAILED
    out = args.out or os.path.join(root, RESULTS_OUT, default_run_id())
    code = validate.validate([os.path.join(root, INVENTORY)], limit=args.limit, profile=args.profile, out=out, forks=args.forks, command="demo")
    return EXIT_FAILED if code == EXIT_FAILED else EXIT_OK


def add_parser(commands):
    """``gpufleet demo``."""
    parser = commands.add_parser(
        "demo",
        help="validate the replayed simulated fleet of the source checkout (what `make demo` runs)",
        description="Build the replayed fleet (tests/replay/build_fleet.py) and run `gpufleet validate` on inventories/simulated/hosts.yml. "
                    "Needs the source checkout. Exit 0 when the run worked (the demo fleet has rejected nodes on purpose), 1 when it failed.",
    )
    parser.add_argument("--limit", metavar="HOSTS", help="only these simulated hosts")
    parser.add_argument("--profile", metavar="NAME", help="judge every node against this profile")
    parser.add_argument("--out", metavar="DIR", help="results directory (default: tests/output/demo/<UTC timestamp> in the checkout)")
    parser.add_argument("--forks", type=int, metavar="N", help="hosts Ansible works on at once")
    parser.set_defaults(func=cmd_demo)
    return parser

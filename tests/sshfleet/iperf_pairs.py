# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real iperf3 between the hosts of an SSH fleet brought up by fleet.sh (root only).

The server runs in the destination host's namespace (``iperf3 -s -1``, bound to its address,
pid file under ``DIR/pids`` so ``fleet.sh down`` finds it), the client in the source host's
namespace with ``--json``; the output is parsed by the product's iperf3 parser. Every run is
bounded in time: the client by ``-t`` and a subprocess timeout, the server by ``-1`` and a kill.

Usage: ``python iperf_pairs.py DIR [--seconds 3] SRC:DST ...`` prints one line per pair.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "collections"))

from gpufleet.parsers.registry import parse  # noqa: E402  pylint: disable=wrong-import-position

BASE_PORT = 5201


class IperfError(Exception):
    """An iperf3 run that did not produce a measurement."""


def fleet_env(state):
    """``{FLEET_ID, HOSTS, NET, BRIDGE}`` of a fleet that is up."""
    values = {}
    with open(os.path.join(state, "fleet.env"), "r", encoding="utf-8") as handle:
        for line in handle:
            key, _sep, value = line.strip().partition("=")
            values[key] = value
    return values


def namespace(env, host):
    return "gf%sh%d" % (env["FLEET_ID"], host)


def address(env, host):
    return "%s.%d" % (env["NET"], host)


def _listening(ns, port):
    proc = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", "sport = :%d" % port],
                          capture_output=True, text=True, timeout=10, check=False)
    return proc.returncode == 0 and ":%d" % port in proc.stdout


def measure(state, src, dst, seconds=3, omit=1, port=BASE_PORT):
    """Run iperf3 from host ``src`` to host ``dst``; return the parsed result (dict)."""
    env = fleet_env(state)
    ns_dst, ns_src = namespace(env, dst), namespace(env, src)
    pid_file = os.path.join(state, "pids", "iperf3-h%d-%d.pid" % (dst, port))
    server = subprocess.Popen(  # pylint: disable=consider-using-with
        ["ip", "netns", "exec", ns_dst, "iperf3", "-s", "-1", "-B", address(env, dst), "-p", str(port), "-I", pid_file],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not _listening(ns_dst, port):
            if server.poll() is not None or time.monotonic() > deadline:
                raise IperfError("iperf3 server on host %d did not start: %s" % (dst, server.stderr.read().decode(errors="replace")))
            time.sleep(0.05)
        client = subprocess.run(
            ["ip", "netns", "exec", ns_src, "iperf3", "-c", address(env, dst), "-p", str(port),
             "-t", str(seconds), "-O", str(omit), "--json", "--connect-timeout", "5000"],
            capture_output=True, text=True, timeout=seconds + omit + 30, check=False)
        try:
            result = parse("iperf3", client.stdout)
        except Exception as exc:  # pylint: disable=broad-except
            raise IperfError("iperf3 h%d -> h%d (rc %d): unparsable output: %s; stderr %s" % (src, dst, client.returncode, exc, client.stderr)) from exc
        if result.get("error") or client.returncode != 0:
            raise IperfError("iperf3 h%d -> h%d failed (rc %d): %s" % (src, dst, client.returncode, result.get("error")))
        server.wait(timeout=10)
        return result
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        if os.path.exists(pid_file):
            os.unlink(pid_file)


def measure_pairs(state, pairs, seconds=3, omit=1):
    """``{(src, dst): received bits/s}`` for each pair, one after the other."""
    return {(src, dst): measure(state, src, dst, seconds, omit)["received_bps"] for src, dst in pairs}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state")
    parser.add_argument("pairs", nargs="+", help="SRC:DST host numbers, e.g. 1:2")
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--omit", type=int, default=1)
    args = parser.parse_args(argv)
    pairs = [tuple(int(part) for part in pair.split(":")) for pair in args.pairs]
    try:
        for (src, dst), bps in measure_pairs(os.path.abspath(args.state), pairs, args.seconds, args.omit).items():
            print("h%d -> h%d %.3f Gbit/s" % (src, dst, bps / 1e9))
    except (IperfError, OSError, subprocess.SubprocessError) as exc:
        sys.stderr.write("iperf_pairs: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A replayed tool slowed, for the tests that need a node-side command to be running when they act (cut a link,
freeze a node, kill a connection, interrupt a run).

:func:`slow_down` replaces a replay wrapper (tests/replay/build_fleet.py) by one that creates a marker file, sleeps,
then replays the recording as before (the recorded output, never invented). The sleep runs as a child the wrapper
waits for and ends on SIGTERM, so a test that ends the wrapper leaves no sleeping process behind.
"""

from __future__ import annotations

import os
import shlex
import stat


def slow_down(wrapper: str, marker: str, seconds: int, first_call_only: bool = False, by: str = "a test") -> None:
    """Replace the replay wrapper ``wrapper``: each call (or only the first, ``first_call_only``: later calls replay
    at once) creates ``marker``, sleeps ``seconds``, then replays. ``by`` names the test, in the wrapper."""
    replay = wrapper + ".replay"
    os.rename(wrapper, replay)
    wait = ": > {m}\ntrap 'kill $! 2>/dev/null; exit 143' TERM\nsleep {s} &\nwait $!\n".format(
        m=shlex.quote(marker), s=int(seconds))
    if first_call_only:
        wait = "if [ ! -e {m} ]; then\n{body}fi\n".format(m=shlex.quote(marker), body=wait)
    with open(wrapper, "w", encoding="utf-8") as handle:
        handle.write("#!/bin/sh\n# test double: the replayed tool, slowed (%s)\n%sexec %s \"$@\"\n"
                     % (by, wait, shlex.quote(replay)))
    os.chmod(wrapper, os.stat(replay).st_mode | stat.S_IXUSR)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long headless Chromium takes to open a page: from asking for it to its load event.

Usage::

    .venv/bin/python benchmarks/browser_load.py tests/output/fleet_scale/report-synthetic-1024/report.html

The page is opened in an iframe of a small probe page (written beside it as ``.browser-load-probe.html``) whose
script notes ``performance.now()`` before it sets the iframe's source and again at the iframe's load event, which
comes once the page is parsed and laid out with everything it holds (the report holds no external asset). The
browser's own start-up is not in the figure. ``--dump-dom`` returns once the probe page has loaded, and prints the
probe's DOM, which holds the figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse
from typing import List, Optional, Tuple

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--allow-file-access-from-files"]
PROBE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>load probe</title></head><body><p id="load">pending</p>
<script>
const start = performance.now();
const frame = document.createElement("iframe");
frame.style.width = "1280px";
frame.style.height = "900px";
frame.onload = () => { document.getElementById("load").textContent = "loaded " + (performance.now() - start) + " ms"; };
frame.src = decodeURIComponent(location.hash.slice(1));
document.body.appendChild(frame);
</script></body></html>
"""
LOADED = re.compile(r"loaded ([0-9.]+) ms")


class BrowserError(Exception):
    """Chromium is missing, or gave no load time."""


class BrowserTimeout(BrowserError):
    """The page did not load within the time given."""


def load_ms(page: str, timeout: float = 120.0, chromium: Optional[str] = None) -> float:
    """Milliseconds from asking for ``page`` (a file) to its load event, in headless Chromium."""
    browser = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        raise BrowserError("chromium is not installed (Debian: apt-get install chromium)")
    page = os.path.abspath(page)
    probe = os.path.join(os.path.dirname(page), ".browser-load-probe.html")
    with open(probe, "w", encoding="utf-8") as handle:
        handle.write(PROBE)
    target = urllib.parse.quote("file://" + urllib.parse.quote(page), safe="")
    url = "file://%s#%s" % (urllib.parse.quote(probe), target)
    with tempfile.TemporaryDirectory(prefix="browser-load-") as profile:
        try:
            returncode, stdout, stderr = _run([browser] + FLAGS + ["--user-data-dir=" + profile, "--dump-dom", url],
                                              timeout)
        finally:
            os.remove(probe)
    if returncode is None:
        raise BrowserTimeout("%s did not load within %.0f s" % (page, timeout))
    found = LOADED.search(stdout)
    if not found:
        raise BrowserError("chromium gave no load time for %s (exit %d): %s" % (
            page, returncode, (stderr.strip().splitlines() or ["no output"])[-1][:300]))
    return float(found.group(1))


def _run(argv: List[str], timeout: float) -> Tuple[Optional[int], str, str]:
    """``(exit status, stdout, stderr)``; the status None when it ran past ``timeout``: then the browser and every
    process it started are killed (a session of their own: its renderer holds the output pipes open)."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None, "", ""
    return proc.returncode, stdout, stderr


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("page", help="an HTML file")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the load (default 120)")
    args = parser.parse_args(argv)
    try:
        print("%s: loaded in %.0f ms" % (args.page, load_ms(args.page, args.timeout)))
    except BrowserError as exc:
        print("browser_load.py: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

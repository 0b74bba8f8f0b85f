# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much of a benchmark phase some node was running a benchmark, against orchestration.

Usage::

    .venv/bin/python benchmarks/phase_share.py RESULTS_DIR --phase-wall SECONDS

``--phase-wall`` is the phase's wall time as the controller saw it (tests/sshfleet/test_shipped_defaults.py measures
it from the first line of the benchmark play to the first line of the judging play, the health re-read included).
The busy time is the union, over every host record's ``benchmarks``, of each run's window on the node's clock:
``started`` (ISO 8601 UTC, cut to the second) to ``started`` + ``duration_s``. A multi-host run is recorded on each of
its hosts and counts once. Because ``started`` is cut to the second, each window may open up to 1 s later than
recorded: the lower bound shifts every window by 1 s and clips it at its recorded end, the upper bound takes the
recorded window. Orchestration is the rest of the phase: task start-up, preflight, the launcher's own start, recording.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from gpufleet.results.bench import run_window
from gpufleet.results.store import ResultsError, RunDir

Window = Tuple[float, float]


def run_windows(records: Iterable[Dict[str, Any]]) -> List[Window]:
    """The window of each benchmark run in ``records`` (host records), a run of several hosts once."""
    seen, windows = set(), []
    for record in records:
        for run in record.get("benchmarks") or []:
            # run_window: from the recorded second to a second past started + duration_s; the recorded window ends
            # at started + duration_s
            window = run_window(dict(run))
            if window is None or window[1] - window[0] <= 1.0:
                continue
            key = (run.get("name"), tuple(sorted(run.get("hosts") or [record.get("host")])), run.get("started"),
                   run.get("repeat"), run.get("round"), run.get("group"))
            if key not in seen:
                seen.add(key)
                windows.append((window[0], window[1] - 1.0))
    return windows


def union_seconds(windows: Iterable[Window]) -> float:
    """Seconds covered by at least one window."""
    total, end = 0.0, None
    for start, stop in sorted(windows):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def busy_bounds(windows: Sequence[Window]) -> Tuple[float, float]:
    """(lower, upper) seconds some node ran a benchmark: each window opened up to 1 s after its recorded second."""
    late = [(start + 1.0, stop) for start, stop in windows if stop > start + 1.0]
    return union_seconds(late), union_seconds(windows)


def share(run_dir: str, phase_wall: float) -> Dict[str, float]:
    """The phase's wall, the busy bounds, and orchestration's share of the wall at each bound (percent); ResultsError
    when ``run_dir`` is not a gpufleet results directory."""
    windows = run_windows([dict(record) for record in RunDir.open(run_dir).host_records().values()])
    low, high = busy_bounds(windows)
    return {"runs": float(len(windows)), "phase_wall_s": phase_wall, "busy_low_s": low, "busy_high_s": high,
            "orchestration_low_pct": 100.0 * max(phase_wall - high, 0.0) / phase_wall if phase_wall > 0 else 0.0,
            "orchestration_high_pct": 100.0 * max(phase_wall - low, 0.0) / phase_wall if phase_wall > 0 else 0.0}


def line(figures: Dict[str, float]) -> str:
    return ("benchmark phase: wall %.1f s; some node running one of %d benchmark runs %.1f-%.1f s; orchestration "
            "%.0f-%.0f %%" % (figures["phase_wall_s"], figures["runs"], figures["busy_low_s"], figures["busy_high_s"],
                              figures["orchestration_low_pct"], figures["orchestration_high_pct"]))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("results_dir", help="a gpufleet results directory (run.json, hosts/*.json)")
    parser.add_argument("--phase-wall", type=float, required=True, help="the benchmark phase's wall time, seconds")
    args = parser.parse_args(argv)
    try:
        print(line(share(args.results_dir, args.phase_wall)))
    except ResultsError as exc:
        print("phase_share.py: %s: give a gpufleet results directory" % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

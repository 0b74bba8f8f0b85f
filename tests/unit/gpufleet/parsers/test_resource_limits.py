# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the limits and ulimit -l parsers against recorded transcripts (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.resource_limits import parse_limits, parse_ulimit_l

TRINITYX = "misc/trinityx-issue188-slurmd-proc-limits-grep-locked-65536.txt"
SNAP_UBUNTU = "misc/snap-slurm-issue83-ubuntu-login-unlimited-but-srun-steps-ulimit-l-16384.txt"
SNAP_CENTOS = "misc/snap-slurm-issue83-centos-srun-steps-ulimit-l-unlimited.txt"
FDS = "misc/fds-issue6023-torque-job-dapl-startup-RLIMIT_MEMLOCK-too-small.txt"


# --- /proc/<pid>/limits -----------------------------------------------------------------------


def test_trinityx_slurmd_locked_memory_64k(fixture_text):
    result = parse_limits(fixture_text(TRINITYX))
    locked = result["max_locked_memory"]
    assert locked["soft"] == 65536
    assert locked["hard"] == 65536
    assert locked["unit"] == "bytes"
    assert locked["unlimited"] is False
    assert locked["line"] == 4
    # the prompt named the file; the ps -elf line of the transcript is not a limits row
    assert result["source"] == "/proc/3844/limits"
    assert result["pid"] == 3844
    assert list(result["limits"]) == ["max_locked_memory"]


def test_full_limits_file_with_unlimited_and_unitless_rows():
    # synthetic: /proc/self/limits layout (25/21/21/10 columns) with the recorded 64 KiB locked row
    text = (
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        "Max open files            1024                 1048576              files     \n"
        "Max locked memory         65536                65536                bytes     \n"
        "Max nice priority         0                    0                    \n"
        "Max realtime timeout      unlimited            unlimited            us        \n"
    )
    result = parse_limits(text)
    assert result["limits"]["max_cpu_time"]["soft"] is None
    assert result["limits"]["max_cpu_time"]["unlimited"] is True
    assert result["limits"]["max_open_files"]["hard"] == 1048576
    assert result["limits"]["max_nice_priority"]["unit"] is None
    assert result["max_locked_memory"]["soft"] == 65536
    assert result["source"] is None


def test_unlimited_soft_only():
    # synthetic: a finite soft limit under an unlimited hard one
    result = parse_limits("Max locked memory         8388608              unlimited            bytes\n")
    locked = result["max_locked_memory"]
    assert (locked["soft"], locked["hard"], locked["hard_unlimited"], locked["unlimited"]) == (8388608, None, True, False)


def test_damaged_value_names_the_line(fixture_text):
    # synthetic: the recorded row with its soft value garbled
    text = fixture_text(TRINITYX).replace("65536                65536", "65k36                65536")
    with pytest.raises(ParseError) as info:
        parse_limits(text)
    assert info.value.line == 4


def test_limits_empty_and_no_row(fixture_text):
    with pytest.raises(ParseError):
        parse_limits("")
    # only the transcript's ps part: no limits row at all
    with pytest.raises(ParseError):
        parse_limits("\n".join(fixture_text(TRINITYX).splitlines()[:2]))


def _trinityx_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, an echoed command after the "cat .../limits" prompt (line 5) and
    # a note after the limits row (line 7)
    return insert_lines(fixture_text(TRINITYX), {
        1: "===== node008 : limits =====",
        5: "+ cat /proc/3844/limits",
        7: "<-- 64 KiB: too small for RDMA",
    })


def test_limits_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_limits(_trinityx_with_foreign_lines(fixture_text))
    locked = result["max_locked_memory"]
    assert (locked["soft"], locked["hard"], locked["unit"], locked["line"]) == (65536, 65536, "bytes", 6)
    assert (result["source"], result["pid"]) == ("/proc/3844/limits", 3844)
    assert list(result["limits"]) == ["max_locked_memory"]
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node008 : limits =====", "why": "banner"},
        {"line": 5, "text": "+ cat /proc/3844/limits", "why": "echoed command"},
        {"line": 7, "text": "<-- 64 KiB: too small for RDMA", "why": "note"},
    ]


def test_limits_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _trinityx_with_foreign_lines(fixture_text)
    # edited: the limits row (line 6 once the lines are in) loses its hard-limit cell
    with pytest.raises(ParseError) as info:
        parse_limits(text.replace("65536                65536", "65536"))
    assert info.value.line == 6


def test_limits_placeholder_is_no_number(fixture_text):
    # edited: the soft value of the recorded row (line 4) masked
    with pytest.raises(ParseError) as info:
        parse_limits(fixture_text(TRINITYX).replace("65536                65536", "<masked>             65536"))
    assert info.value.line == 4


# --- ulimit -l ------------------------------------------------------------------------------


def test_snap_ubuntu_login_unlimited_but_jobs_16384(fixture_text):
    result = parse_ulimit_l(fixture_text(SNAP_UBUNTU))
    assert [(v["line"], v["kib"], v["unlimited"]) for v in result["values"]] == [(2, None, True), (6, 16384, False), (7, 16384, False)]
    assert result["values"][0]["command"] == "ulimit -l"
    assert result["values"][1]["command"] == "srun -N2 ./ulimit.sh"
    assert result["unlimited"] is False
    assert result["min_kib"] == 16384
    # 'cat ulimit.sh' shows the script: its 'ulimit -l' line is not a value
    assert result["commands"] == ["ulimit -l", "srun -N2 ./ulimit.sh", "cat ulimit.sh"]
    assert result["too_small_reports"] == []


def test_snap_centos_everything_unlimited(fixture_text):
    result = parse_ulimit_l(fixture_text(SNAP_CENTOS))
    assert [v["line"] for v in result["values"]] == [3, 7, 8]
    assert result["unlimited"] is True
    assert result["min_kib"] is None
    assert result["values"][2]["command"] == "srun -p nash -N2 ./ulimit.sh"


def test_fds_dapl_reports_memlock_too_small_per_rank(fixture_text):
    result = parse_ulimit_l(fixture_text(FDS))
    assert result["values"] == []
    assert result["unlimited"] is None
    assert [(r["line"], r["rank"]) for r in result["too_small_reports"]] == [(1, 0), (2, 1)]
    assert result["too_small_reports"][0]["text"] == "DAPL startup: RLIMIT_MEMLOCK too small"


def test_bare_value():
    assert parse_ulimit_l("64\n")["min_kib"] == 64
    assert parse_ulimit_l("unlimited")["unlimited"] is True


def test_ulimit_garbage_names_the_line(fixture_text):
    # synthetic: the login value of the recording replaced by an error message
    text = fixture_text(SNAP_UBUNTU).replace("unlimited", "bash: ulimit: bad option", 1)
    with pytest.raises(ParseError) as info:
        parse_ulimit_l(text)
    assert info.value.line == 2
    with pytest.raises(ParseError):
        parse_ulimit_l("  \n")


def _snap_ubuntu_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, an echoed command after the "$ ulimit -l" prompt (line 3) and a
    # note between the two tasks' values of the srun step (line 9)
    return insert_lines(fixture_text(SNAP_UBUNTU), {
        1: "===== node-07 : ulimit -l =====",
        3: "+ ulimit -l",
        9: "<-- the second task",
    })


def test_ulimit_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_ulimit_l(_snap_ubuntu_with_foreign_lines(fixture_text))
    values = [(v["line"], v["kib"], v["unlimited"]) for v in result["values"]]
    assert values == [(4, None, True), (8, 16384, False), (10, 16384, False)]
    assert result["min_kib"] == 16384
    assert result["commands"] == ["ulimit -l", "srun -N2 ./ulimit.sh", "cat ulimit.sh"]
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : ulimit -l =====", "why": "banner"},
        {"line": 3, "text": "+ ulimit -l", "why": "echoed command"},
        {"line": 9, "text": "<-- the second task", "why": "note"},
    ]


def test_ulimit_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _snap_ubuntu_with_foreign_lines(fixture_text)
    # edited: the login value "unlimited" (line 4 once the lines are in) cut short
    with pytest.raises(ParseError) as info:
        parse_ulimit_l(text.replace("unlimited", "unlimi", 1))
    assert info.value.line == 4


def test_ulimit_placeholder_is_no_value(fixture_text):
    # edited: the login value (line 2) masked
    with pytest.raises(ParseError) as info:
        parse_ulimit_l(fixture_text(SNAP_UBUNTU).replace("unlimited", "<masked>", 1))
    assert info.value.line == 2

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EDITED inputs for the parsers' foreign-line tests: a real recording with lines put in at known places."""

from __future__ import annotations


def insert_lines(text: str, inserted: dict) -> str:
    """``text`` with each ``inserted[n]`` placed so that it is line ``n`` (1-based) of the result.

    The numbers are those of the edited text: ``{1: "$ nvidia-smi -q", 10: "<-- here"}`` puts the prompt first and
    the note at line 10, the recording's own lines moving down around them.
    """
    lines = text.split("\n")
    for number in sorted(inserted):
        if not 1 <= number <= len(lines) + 1:
            raise ValueError("line %d is outside the edited text (%d lines)" % (number, len(lines) + 1))
        lines.insert(number - 1, inserted[number])
    return "\n".join(lines)

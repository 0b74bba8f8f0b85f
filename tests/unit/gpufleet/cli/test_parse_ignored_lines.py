# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet parse KIND FILE` prints the lines the parser skipped as foreign (``ignored_lines``) with the rest."""

from __future__ import annotations

import json
import os

from gpufleet.cli import main as cli

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def test_parse_prints_the_skipped_prompt_line(capsys):
    # the recording's line 1 is the author's "$ nvidia-smi topo -m"
    path = os.path.join(FIXTURES, "topo", "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt")
    assert cli.main(["parse", "topo", path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ignored_lines"] == [{"line": 1, "text": "$ nvidia-smi topo -m", "why": "shell prompt"}]
    assert len(data["gpus"]) == 8

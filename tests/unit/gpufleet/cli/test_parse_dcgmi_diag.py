# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet parse dcgmi-diag FILE`: DCGM's diagnostic JSON through the registry (expected values read by hand
from the recordings in tests/fixtures/dcgm/, see its SOURCES.md)."""

from __future__ import annotations

import json
import os

from gpufleet.cli import main as cli
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import KINDS, parse

DCGM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "dcgm")
# a DGX Spark (GB10), DCGM 4.5.2, level 2: software Fail (persistence mode off), memory and pcie allowed, Pass
PLUGINS_ALLOWED = "gb10-dcgm-4.5.2-diag-r2-j-memory-pcie-Pass-software-Fail-persistence.json"
# the same machine with the memory and pcie plugins gated off: both Skip
PLUGINS_GATED = "gb10-dcgm-4.5.2-diag-r2-j-memory-pcie-Skip-software-Fail-persistence.json"
PERSISTENCE = ('Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running '
               '"nvidia-smi -i <gpuId> -pm 1 " as root.')


def _read(name):
    with open(os.path.join(DCGM, name), encoding="utf-8") as handle:
        return handle.read()


def test_the_kind_is_registered():
    assert KINDS["dcgmi-diag"][:2] == ("dcgmi_diag", "parse_dcgmi_diag")


def test_cli_parses_the_recording(capsys):
    code = cli.main(["parse", "dcgmi-diag", os.path.join(DCGM, PLUGINS_ALLOWED)])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert json.loads(out) == {
        "version": "4.5.2",
        "driver_version": "580.82.09",
        "runtime_error": None,
        "tests": [
            {"category": "Deployment", "name": "software", "status": "fail",
             "entities": [{"entity": 0, "status": "fail", "warnings": [PERSISTENCE]}]},
            {"category": "Hardware", "name": "memory", "status": "pass",
             "entities": [{"entity": 0, "status": "pass", "warnings": []}]},
            {"category": "Integration", "name": "pcie", "status": "pass",
             "entities": [{"entity": 0, "status": "pass", "warnings": []}]},
        ],
        "counts": {"fail": 1, "pass": 2},
    }


def test_registry_reads_the_skipped_tests():
    parsed = parse("dcgmi-diag", _read(PLUGINS_GATED))
    assert [(test["name"], test["status"]) for test in parsed["tests"]] == [("software", "fail"), ("memory", "skip"), ("pcie", "skip")]
    assert parsed["counts"] == {"fail": 1, "skip": 2}


def test_text_output_is_refused_naming_the_kind(capsys, tmp_path):
    # SYNTHETIC text without a JSON document (dcgmi diag run without -j prints a table)
    path = tmp_path / "diag.txt"
    path.write_text("Successfully ran diagnostic for group.\n+---------------------------+\n", encoding="utf-8")
    code = cli.main(["parse", "dcgmi-diag", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("gpufleet parse: ") and "dcgmi-diag" in err and "no JSON document" in err
    try:
        parse("dcgmi-diag", path.read_text(encoding="utf-8"))
    except ParseError as exc:
        assert exc.kind == "dcgmi-diag"
    else:
        raise AssertionError("text output parsed")

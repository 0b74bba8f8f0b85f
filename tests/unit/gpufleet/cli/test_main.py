# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet parse KIND FILE`: JSON out, a one-line error naming the line, exit codes."""

from __future__ import annotations

import io
import json
import os

import pytest

from gpufleet.cli import main as cli
from gpufleet.parsers.registry import KINDS, get_parser

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def _run(capsys, argv):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_prints_the_matrix_as_json(capsys):
    path = os.path.join(FIXTURES, "topo", "mlengineering-2gpu-nv2-bridge-no-legend.txt")
    code, out, err = _run(capsys, ["parse", "topo", path])
    assert code == 0 and err == ""
    data = json.loads(out)
    # The recording: two GPUs joined by an NVLink bridge, NV2 each way.
    assert data["links"]["GPU0"]["GPU1"] == "NV2"
    assert [gpu["name"] for gpu in data["gpus"]] == ["GPU0", "GPU1"]


def test_damaged_input_exits_1_with_one_line_naming_the_line(capsys):
    path = os.path.join(FIXTURES, "topo", "hgx-h100-12nic-numa-off-aihub0008-PASTE-DAMAGED.txt")
    code, out, err = _run(capsys, ["parse", "topo", path])
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    # Line 7 is the GPU5 row whose cells were fused into "PIXNODE".
    assert "line 7:" in err and err.startswith("gpufleet parse: ")


def test_standard_input_and_compact_output(capsys, monkeypatch):
    with open(os.path.join(FIXTURES, "ib", "dgx-spark-gb10-ibdev2netdev-2up-2down.txt"), encoding="utf-8") as handle:
        monkeypatch.setattr("sys.stdin", io.StringIO(handle.read()))
    code, out, _err = _run(capsys, ["parse", "--compact", "ibdev2netdev", "-"])
    assert code == 0
    assert out.count("\n") == 1
    assert len(json.loads(out)["mappings"]) == 4


def test_missing_file_is_a_usage_error(capsys):
    code, _out, err = _run(capsys, ["parse", "topo", "/nonexistent/topo.txt"])
    assert code == 2 and "cannot read /nonexistent/topo.txt" in err


def test_unknown_kind_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["parse", "no-such-kind", "-"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_every_registered_kind_has_its_parser():
    for kind in KINDS:
        assert callable(get_parser(kind)), kind


def test_parse_error_quoting_hostile_node_text_shows_its_control_characters_escaped(capsys, tmp_path):
    # SYNTHETIC hostile tool output (written here): the topo parser quotes the first line in its error, a line
    # holding a right-to-left override (U+202E), BEL and an OSC title sequence
    path = tmp_path / "hostile-topo.txt"
    path.write_text("x\u202eevil\x07\n\x1b]0;owned\x07\n", encoding="utf-8")
    code, out, err = _run(capsys, ["parse", "topo", str(path)])
    assert code == 1 and out == ""
    assert not any(char in err for char in ("\x1b", "\u202e", "\x07"))
    # the first line shown once, escaped
    assert err == ("gpufleet parse: %s: topo: line 1: no topology matrix (no header row starting with GPU0) "
                   "['x\\u202eevil\\x07']\n" % path)


@pytest.mark.parametrize("kind", ["kernel-log", "topo", "iperf3"])
def test_a_binary_file_is_refused_for_every_kind(capsys, tmp_path, kind):
    # SYNTHETIC: the first bytes of an ELF header (written here), which kernel-log read as a log with no Xid
    path = tmp_path / "a.out"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00Xid 79\n")
    code, out, err = _run(capsys, ["parse", kind, str(path)])
    assert code == 1 and out == ""
    assert err == ("gpufleet parse: %s: binary data (a NUL byte at character 7), not the text output of a tool (%s): "
                   "nothing parsed\n" % (path, kind))


def test_an_nvidia_smi_q_fragment_names_what_to_give_not_a_python_function(capsys, tmp_path):
    path = tmp_path / "fabric.txt"
    path.write_text("    Fabric\n        State                             : Completed\n", encoding="utf-8")
    code, _out, err = _run(capsys, ["parse", "nvidia-smi-q", str(path)])
    assert code == 1 and "()" not in err
    assert "give the whole output of nvidia-smi -q" in err

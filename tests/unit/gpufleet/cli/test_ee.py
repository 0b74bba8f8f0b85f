"""`gpufleet validate --ee IMAGE` (gpufleet/cli/ee.py): the ansible-runner arguments of a run in an execution
environment, and the refusal where no container engine exists."""

import os

import pytest

from gpufleet.cli import main as cli
from gpufleet.cli import ee, validate
from gpufleet.cli.playbook_options import PlaybookOptions


def test_the_run_goes_into_the_image_with_its_paths_at_their_own_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    inventory = tmp_path / "inv" / "hosts.yml"
    inventory.parent.mkdir()
    inventory.write_text("all: {}\n")
    keys = tmp_path / "keys"
    keys.mkdir()
    options = PlaybookOptions.from_args(cli.build_parser().parse_args(
        ["validate", "-i", str(inventory), "--ee", "gpufleet-ee:1", "--ee-mount", str(keys)]))
    kwargs = validate.runner_kwargs(str(tmp_path / "p"), [str(inventory)], "/results/r1", options=options)
    monkeypatch.setattr(ee.shutil, "which", lambda name: "/usr/bin/" + name if name == "docker" else None)
    out = ee.ee_kwargs(kwargs, options.ee, "/results/r1", options.ee_mounts)
    assert (out["process_isolation"], out["process_isolation_executable"], out["container_image"]) == (
        True, "docker", "gpufleet-ee:1")
    assert out["playbook"] == "gpufleet.acceptance.validate_cluster"
    read_only = [inventory.parent, tmp_path / ".ssh", keys]
    assert out["container_volume_mounts"] == ["/results/r1:/results/r1:Z"] + ["%s:%s:ro,Z" % (path, path)
                                                                              for path in read_only]
    assert out["container_options"] == ["--network=host", "--user=0"]
    # this machine's paths stay out; the rest of the environment goes in
    assert not {"ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_CONFIG", "PATH"} & set(out["envvars"])
    assert out["envvars"]["ANSIBLE_NOCOLOR"] == "1" and out["extravars"] == kwargs["extravars"]
    assert options.arguments() == ["--ee", "gpufleet-ee:1", "--ee-mount", str(keys)]


def test_no_container_engine_is_refused_before_anything_runs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(ee.shutil, "which", lambda name: None)
    with pytest.raises(ee.EEError, match="install podman"):
        ee.engine()
    assert cli.main(["validate", "-i", str(tmp_path), "--ee", "gpufleet-ee:1", "--out", str(tmp_path / "r")]) == 64
    assert "gpufleet validate: --ee runs the playbook in a container: install podman" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "r")

"""The report's line of what --slurm-drain did to a node (gpufleet/report/model.py slurm_words), from slurm.json as
the action plugin writes it (gpufleet/results/slurm_drain.py action_record)."""

from gpufleet.report.model import slurm_words
from gpufleet.results.slurm_drain import DrainAction, action_record

DRAIN = DrainAction("n1", "node-1", "drain", "REJECT", "gpufleet: eth0 runs at 1 Gb/s")
KEEP = DrainAction("n2", "node-2", "keep", "an administrator's reason (admin: fan): left as it is")


def test_the_command_as_run_is_named_and_a_failure_said():
    slurm = {"reached": True,
             "actions": [action_record(DRAIN, "scontrol", 0, ""), action_record(KEEP, "scontrol", None, "")]}
    assert slurm_words(slurm) == {
        "n1": "drain: scontrol update NodeName=node-1 State=DRAIN 'Reason=gpufleet: eth0 runs at 1 Gb/s'",
        "n2": "keep: an administrator's reason (admin: fan): left as it is"}
    assert slurm_words(None) == {} and slurm_words({"actions": ["damaged", {"host": None}]}) == {}
    failed = {"actions": [action_record(DRAIN, "scontrol", 1, "slurm_update error: Invalid node name specified"),
                          action_record(DRAIN, "scontrol", 0, "")]}
    # a host's first action is what the report says
    assert slurm_words(failed)["n1"].endswith("(failed, exit 1: slurm_update error: Invalid node name specified)")

"""Verdicts as Slurm drains (gpufleet/results/slurm_drain.py): the plan from verdicts and sinfo's node states.

sinfo's output is a recording of the test Slurm (tests/fixtures/slurm/SOURCES.md): gf4h1 drained by gpufleet (a "|"
inside its reason), gf4h2 drained by an administrator ("admin: bad fan"), gf4h3 idle.
"""

import os

from gpufleet.results.slurm_drain import REASON_MAX, drain_reason, parse_sinfo, plan_drains

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm",
                       "sinfo-node-format-reason-22.05.8.txt")


def _states():
    with open(FIXTURE, encoding="utf-8") as handle:
        states, foreign = parse_sinfo(handle.read())
    assert foreign == []
    return states


def test_sinfo_states_and_reasons_as_printed():
    states = _states()
    assert sorted(states) == ["gf4h1", "gf4h2", "gf4h3"]
    assert states["gf4h1"].reason == "gpufleet: eth0 runs at 1 Gb/s, claimed 1x 10 Gb/s frontend ethernet | second part"
    assert states["gf4h1"].drained and states["gf4h1"].ours
    assert states["gf4h2"].drained and not states["gf4h2"].ours and states["gf4h2"].reason == "admin: bad fan"
    assert states["gf4h3"].state == "idle" and states["gf4h3"].reason is None and not states["gf4h3"].drained
    # a line that is not NAME|STATE|REASON is listed, not guessed
    assert parse_sinfo("gf9h1 idle\n\n")[1] == ["gf9h1 idle"]


def test_reject_drains_with_the_prefixed_first_reason_cut_to_the_limit():
    assert drain_reason("eth0 runs at 1 Gb/s,\nclaimed 10") == "gpufleet: eth0 runs at 1 Gb/s, claimed 10"
    long = drain_reason("x" * 500)
    assert len(long) == REASON_MAX == 200 and long.startswith("gpufleet: xxx") and long.endswith("...")
    [action] = plan_drains({"gf4h3": ("REJECT", "GPU2 runs 1 process")}, _states())
    assert (action.action, action.reason) == ("drain", "gpufleet: GPU2 runs 1 process")
    assert action.argv() == ["scontrol", "update", "NodeName=gf4h3", "State=DRAIN",
                             "Reason=gpufleet: GPU2 runs 1 process"]


def test_an_administrators_drain_is_kept_whatever_the_verdict():
    for verdict in ("REJECT", "ACCEPT", "INCOMPLETE"):
        [action] = plan_drains({"gf4h2": (verdict, "slow")}, _states())
        assert action.action == "keep" and "administrator's reason (admin: bad fan)" in action.why
        assert action.argv() is None


def test_only_our_drain_is_resumed_and_only_after_a_pass():
    actions = plan_drains({"gf4h1": ("ACCEPT", None), "gf4h3": ("ACCEPT", None)}, _states())
    assert [(action.node, action.action) for action in actions] == [("gf4h1", "resume"), ("gf4h3", "keep")]
    assert actions[0].argv("/usr/bin/scontrol") == ["/usr/bin/scontrol", "update", "NodeName=gf4h1", "State=RESUME"]
    # not measured: our drain stays
    for verdict in ("INCOMPLETE", "UNREACHABLE"):
        [action] = plan_drains({"gf4h1": (verdict, None)}, _states())
        assert action.action == "keep" and "stays until a passing retest" in action.why


def test_a_host_under_another_node_name_and_one_slurm_does_not_know():
    actions = plan_drains({"node-a.example": ("REJECT", "slow"), "other": ("REJECT", "slow")}, _states(),
                          node_names={"node-a.example": "gf4h3"})
    assert [(action.host, action.node, action.action) for action in actions] == [
        ("node-a.example", "gf4h3", "drain"), ("other", "other", "absent")]


# One table of cases for the two places the rules live: the controller's plan and the node's health check program
# (roles/slurm_gate/files/gpufleet_slurm_health.py, stdlib-only, so it cannot import the library).
# (sinfo state, reason, verdict) -> the command each runs: "drain", "resume" or None
CASES = [
    ("idle", None, "REJECT", "drain"),
    ("drained", "gpufleet: GPU2 runs 1 process", "REJECT", None),   # already so drained
    ("drained", "gpufleet: an older reason", "REJECT", "drain"),     # our drain, the new reason
    ("drained", "admin: bad fan", "REJECT", None),
    ("down", "Not responding", "REJECT", None),
    ("drained", "gpufleet: GPU2 runs 1 process", "ACCEPT", "resume"),
    ("draining", "gpufleet: GPU2 runs 1 process", "ACCEPT WITH WARNINGS", "resume"),
    ("drained", "admin: bad fan", "ACCEPT", None),
    ("idle", None, "ACCEPT", None),
    ("drained", "gpufleet: GPU2 runs 1 process", "INCOMPLETE", None),
    ("drained", "gpufleet: GPU2 runs 1 process", "UNREACHABLE", None),
]


def _health_program():
    import importlib.machinery
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "slurm_gate", "files",
                        "gpufleet_slurm_health.py")
    loader = importlib.machinery.SourceFileLoader("gpufleet_slurm_health", path)
    spec = importlib.util.spec_from_loader("gpufleet_slurm_health", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_controller_and_the_node_decide_alike():
    from gpufleet.results.slurm_drain import NodeState, verdict_file
    health = _health_program()
    for state, reason, verdict, expected in CASES:
        [planned] = plan_drains({"n1": (verdict, "GPU2 runs 1 process")}, {"n1": NodeState("n1", state, reason)})
        on_node = health.decide(verdict_file(verdict, "GPU2 runs 1 process", "r1", "t"), state, reason)
        assert (planned.action if planned.argv() else None) == on_node == expected, (state, reason, verdict)

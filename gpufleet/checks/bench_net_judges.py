# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pair-run judges of the bench_network checks (pure): iperf3 alone, ib_write_bw and ib_write_lat per rail pair.

Each is a checks/bench_pair_judge.py :class:`PairJudge`: what a repeat's figure is, and what it is held to
(checks/bench_net_floors.py). Every iperf3 run is recorded under the host that ran its client, with
``hosts: [client, server]``; a perftest run's ends are (host, HCA) rails, the HCAs from its ``group``
(``mlx5_0->mlx5_1``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from gpufleet.checks.bench_net_floors import Limit, ib_write_bw_floor, ib_write_lat_limit, iperf3_floor
from gpufleet.checks.bench_net_records import Ends, bw_row, iperf3_gbps, iperf3_parsed, rail_ends
from gpufleet.checks.bench_pair_judge import PairJudge
from gpufleet.checks.bench_records import Record
from gpufleet.checks.model import NodeContext
from gpufleet.checks.network import num
from gpufleet.checks.profiles import profile_value


class Iperf3Judge(PairJudge):
    """iperf3 alone: median interval of each repeat, voted, against fraction x line rate."""

    check_id = "bench_network.iperf3"
    kind = "iperf3"
    what = "iperf3"
    unit = "Gb/s"

    def figure(self, parsed: dict[str, Any]) -> Optional[float]:
        return iperf3_gbps(parsed)

    def run_error(self, parsed: dict[str, Any]) -> Any:
        # iperf3 --json reports a failed run in "error" and may still exit 0 with the intervals it had
        return parsed.get("error")

    def parsed_of(self, record: Record) -> dict[str, Any]:
        return iperf3_parsed(record)

    def threshold(self, client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Optional[Limit]:
        return iperf3_floor(client_node, server_node)

    def no_threshold_words(self) -> str:
        return "claim an ethernet NIC or set gpufleet_iperf3_line_rate_gbps"


class IbWriteBwJudge(PairJudge):
    """ib_write_bw per rail pair: BW average at the threshold's size against ``thresholds.ib_write_bw``."""

    check_id = "bench_network.ib_write_bw"
    kind = "ib_write_bw"
    what = "ib_write_bw"
    unit = "Gb/s"
    digits = 2

    def __init__(self, nodes: Sequence[NodeContext]) -> None:
        super().__init__(nodes)
        # the size the profiles name (a profile without the threshold names none); several: none of them is judged,
        # and every message says so
        sizes = {(profile_value(node.profile, "thresholds.ib_write_bw")[0] or {}).get("message_size") for node in nodes}
        self.mixed_sizes = sorted(size for size in sizes if size is not None)
        self.size = self.mixed_sizes.pop() if len(self.mixed_sizes) == 1 else None

    def ends(self, record: Record) -> Optional[Ends]:
        return rail_ends(record)

    def figure(self, parsed: dict[str, Any]) -> Optional[float]:
        row, _exact = bw_row(parsed, self.size)
        return None if row is None else float(row["bw_avg_gbps"])

    def notes(self, parsed: dict[str, Any]) -> list[str]:
        row, exact = bw_row(parsed, self.size)
        out = []
        if row is not None and self.mixed_sizes:
            sizes = ", ".join(num(size) for size in self.mixed_sizes)
            out.append("at %s bytes, the largest size printed; the profiles' thresholds.ib_write_bw.message_size "
                       "differ (%s bytes), so none was applied" % (num(row.get("bytes")), sizes))
        elif row is not None:
            missing = ", the largest size printed; thresholds.ib_write_bw.message_size %s bytes is not in the output"
            out.append("at %s bytes%s" % (num(row.get("bytes")), "" if exact else missing % num(self.size)))
        if parsed.get("gpu_direct"):
            out.append("GPUDirect")
        return out

    def threshold(self, client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Optional[Limit]:
        return ib_write_bw_floor(client_node, server_node)

    def no_threshold_words(self) -> str:
        return "the profile has no thresholds.ib_write_bw"


class IbWriteLatJudge(PairJudge):
    """ib_write_lat per rail pair: typical latency of the smallest size against gpufleet_ib_write_lat_max_us (5 us)."""

    check_id = "bench_network.ib_write_lat"
    kind = "ib_write_lat"
    what = "ib_write_lat"
    unit = "us"
    digits = 2
    higher_is_better = False

    def ends(self, record: Record) -> Optional[Ends]:
        return rail_ends(record)

    def figure(self, parsed: dict[str, Any]) -> Optional[float]:
        rows = [row for row in parsed.get("results") or [] if isinstance(row.get("t_typical_us"), (int, float))]
        if not rows:
            return None
        return float(min(rows, key=lambda item: item.get("bytes") or 0)["t_typical_us"])

    def threshold(self, client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Optional[Limit]:
        return ib_write_lat_limit(client_node, server_node)

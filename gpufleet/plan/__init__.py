# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning what runs across nodes: the NCCL environment, the pairwise bad-node search, the network benchmark pairs."""

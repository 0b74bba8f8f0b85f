# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible adapter: what the collection's action plugins share, and the only part of the library that imports
Ansible (an import contract in pyproject.toml keeps the stages below free of it).

- ``spec``: an action plugin's argument spec, generated from its module's DOCUMENTATION (options declared once);
- ``action``: the base classes of the controller actions and of the single-group fact actions;
- ``connection``: one reconnect after a lost ssh connection;
- ``node_facts``: the four fact modules run one by one (node_facts' ``collector: separate``).
"""

"""Scenarios: the user's TOML, validated, and resolved into the engine's config.

* :mod:`.model`: the pydantic models (:class:`Scenario`, :class:`Bottleneck`,
  :class:`TcpFlow`, :class:`UdpFlow`, :class:`UdpPragueFlow`) and their cross-field checks;
* :mod:`.resolve`: a validated scenario → the engine's JSON config;
* :mod:`.load`: TOML files and strings, dicts, ``--set`` overrides;
* :mod:`.errors`: pydantic's errors → one ``ScenarioError`` line.
"""

from __future__ import annotations

from .load import (
    apply_overrides,
    coerce_scenario,
    load_scenario,
    parse_override,
    read_toml_file,
    reference_scenario_path,
    scenario_from_dict,
    scenario_from_toml,
)
from .model import TCP_ECN_WORDS, Bottleneck, Scenario, TcpFlow, UdpFlow, UdpPragueFlow
from .resolve import UDP_IP_UDP_HEADER_BYTES

__all__ = [
    "Scenario",
    "Bottleneck",
    "TcpFlow",
    "UdpFlow",
    "UdpPragueFlow",
    "load_scenario",
    "scenario_from_toml",
    "scenario_from_dict",
    "coerce_scenario",
    "read_toml_file",
    "apply_overrides",
    "parse_override",
    "reference_scenario_path",
    "UDP_IP_UDP_HEADER_BYTES",
    "TCP_ECN_WORDS",
]

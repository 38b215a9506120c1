"""Scenarios: the user's TOML, validated, and resolved into the engine's config.

* :mod:`.model`: the pydantic models (:class:`Scenario`, :class:`Bottleneck`,
  :class:`TcpFlow`, :class:`UdpFlow`, :class:`UdpPragueFlow`) and their cross-field checks;
* :mod:`.resolve`: a validated scenario → the engine's JSON config;
* :mod:`.load`: TOML files and strings, dicts, ``--set`` overrides;
* :mod:`.errors`: pydantic's errors → one ``ScenarioError`` line.
"""

from __future__ import annotations

from . import load as _load
from .load import *  # noqa: F401,F403 - the loading API, as .load lists it
from .model import TCP_ECN_WORDS, Bottleneck, Scenario, TcpFlow, UdpFlow, UdpPragueFlow
from .resolve import UDP_IP_UDP_HEADER_BYTES

__all__ = [
    "Scenario",
    "Bottleneck",
    "TcpFlow",
    "UdpFlow",
    "UdpPragueFlow",
    *_load.__all__,
    "UDP_IP_UDP_HEADER_BYTES",
    "TCP_ECN_WORDS",
]

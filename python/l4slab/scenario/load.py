"""Loading scenarios: TOML files and strings, dicts, and ``--set`` overrides by key path.

:func:`load_scenario` reads a file (its name defaults to the file's stem),
:func:`coerce_scenario` accepts whatever :func:`l4slab.run` does, and
:func:`apply_overrides` sets fields by path (``flows[0].cc``, ``flows.0.cc`` or
``flows__0__cc``) before validation. :func:`read_toml_file` is the one TOML-file
reader of the package (scenario, study and base files): a missing, unreadable or
malformed file is one :class:`~l4slab.errors.ScenarioError` line.
"""

from __future__ import annotations

import copy
import os
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from ..errors import ScenarioError
from ..io import read_input
from ..limits import check_values, show
from .errors import one_line
from .model import KERNEL_CCS_CONTEXT, Scenario

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "load_scenario",
    "scenario_from_toml",
    "scenario_from_dict",
    "coerce_scenario",
    "read_toml_file",
    "apply_overrides",
    "parse_override",
    "reference_scenario_path",
    "anchor_kernel_paths",
]


def scenario_from_dict(data: Mapping[str, Any], *, default_name: str | None = None) -> Scenario:
    """Validate a plain dict (as parsed from TOML); raise ScenarioError on the first problem."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"scenario: {show(data)} is not a table of settings")
    check_values(dict(data))
    if default_name is not None and "name" not in data:
        data = {"name": default_name, **data}
    try:
        scenario = Scenario.model_validate(dict(data), context={KERNEL_CCS_CONTEXT: _kernel_cc_names(data)})
    except ValidationError as err:
        raise one_line(err) from None
    except RecursionError:
        raise ScenarioError("scenario: nested too deeply") from None
    scenario.check()
    return scenario


def _kernel_cc_names(data: Mapping[str, Any]) -> list[str]:
    """The congestion controls ``[kernel] cc_sources`` register, read before the flows are
    validated (a flow may name one); a file that cannot be read registers nothing here and
    is reported by its own field's check."""
    table = data.get("kernel")
    sources = table.get("cc_sources") if isinstance(table, Mapping) else None
    if not isinstance(sources, list):
        return []
    from ..kernel.sources import read_cc_source

    names: list[str] = []
    for path in sources[:16]:
        try:
            names += read_cc_source(path).names if isinstance(path, str) and path.strip() else []
        except (ValueError, OSError):
            continue
    return names


def _anchor(root: Path, path: Any) -> Any:
    return str(root / os.path.expanduser(path)) if isinstance(path, str) and path.strip() else path


def anchor_kernel_paths(data: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """``data`` with its ``[kernel]`` file paths and its links' ``rate_trace`` files made
    absolute against ``root`` (the folder of the file they were written in), so the scenario
    can travel (a study's plan, a worker)."""
    if not isinstance(data, Mapping):
        return dict(data)
    data = dict(data)
    for key in ("bottleneck", "reverse_bottleneck"):
        link = data.get(key)
        if isinstance(link, Mapping) and "rate_trace" in link:
            data[key] = {**link, "rate_trace": _anchor(root, link["rate_trace"])}
    topology = data.get("topology")
    if isinstance(topology, Mapping) and isinstance(topology.get("hops"), list):
        hops = [
            {**h, "rate_trace": _anchor(root, h["rate_trace"])} if isinstance(h, Mapping) and "rate_trace" in h else h
            for h in topology["hops"]
        ]
        data["topology"] = {**topology, "hops": hops}
    table = data.get("kernel")
    if not isinstance(table, Mapping):
        return dict(data)
    anchored = dict(table)
    for key in ("cc_sources", "patches"):
        paths = anchored.get(key)
        if isinstance(paths, list):
            anchored[key] = [_anchor(root, p) for p in paths]
    return {**data, "kernel": anchored}


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    if "\0" in text:
        raise ScenarioError(f"{source}: invalid TOML: it holds a NUL character")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{source}: invalid TOML: {err}") from None
    except ValueError:  # Python's int-str limit: an integer of more than 4 300 digits
        raise ScenarioError(f"{source}: invalid TOML: a number with too many digits") from None
    except RecursionError:
        raise ScenarioError(f"{source}: invalid TOML: arrays or tables nested too deeply") from None


def scenario_from_toml(text: str, *, source: str = "scenario", overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Validate a TOML document, applying ``overrides`` (see :func:`apply_overrides`) first."""
    data = _parse_toml(text, source)
    if overrides:
        data = apply_overrides(data, overrides)
    return scenario_from_dict(data)


def read_toml_file(file: Path, what: str) -> tuple[dict[str, Any], str]:
    """Parse a TOML file, returning its tables and its text; a missing, unreadable or
    malformed ``what`` file ("scenario", "study") is a one-line :class:`ScenarioError`, and
    so is anything but a regular file of at most 64 MiB read in time (:func:`l4slab.io.read_input`)."""
    try:
        text = read_input(file, f"{what} file").decode("utf-8")
    except ScenarioError:  # not a regular file, too large, not read in time
        raise
    except FileNotFoundError:
        raise ScenarioError(f"{file}: no such {what} file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{file}: is a directory, not a {what} file") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{file}: not a UTF-8 text file") from None
    except ValueError:  # a NUL character in the name
        raise ScenarioError(f"{show(str(file))}: not a file name (it holds a NUL character)") from None
    except OSError as err:  # too long a name, no permission, a path through a file
        raise ScenarioError(f"{show(str(file))}: cannot read the {what} file: {err.strerror or err}") from None
    data = _parse_toml(text, show(str(file), 200).strip("'"))
    # [kernel] files are relative to the file that names them: a scenario, or a study's [base]
    root = file.resolve().parent
    if what == "scenario":
        data = anchor_kernel_paths(data, root)
    elif what == "study" and isinstance(data.get("base"), Mapping):
        data["base"] = anchor_kernel_paths(data["base"], root)
    return data, text


def reference_scenario_path():
    """The packaged reference scenario (2 CUBIC flows, 100 Mbit/s, 10 ms, 2 BDP bfifo), a
    resource path (``Traversable``);
    ``examples/reference.toml`` in the repository is a link to this one file."""
    return resources.files("l4slab").joinpath("scenarios", "reference.toml")


def load_scenario(path: str | os.PathLike[str], *, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Load and validate a scenario file; its name defaults to the file's stem."""
    file = Path(path)
    data, _ = read_toml_file(file, "scenario")
    if overrides:
        data = apply_overrides(data, overrides)
    return scenario_from_dict(data, default_name=file.stem)


def coerce_scenario(scenario: Any, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Accept a Scenario, a dict, a path or a TOML string; apply ``overrides``."""
    if isinstance(scenario, Scenario):
        if not overrides:
            return scenario
        raise ScenarioError(
            "overrides: cannot be applied to an already validated Scenario; pass the path, TOML or dict instead"
        )
    if isinstance(scenario, Mapping):
        data = apply_overrides(scenario, overrides) if overrides else scenario
        return scenario_from_dict(data)
    if isinstance(scenario, os.PathLike):
        return load_scenario(scenario, overrides=overrides)
    if isinstance(scenario, str):
        # A path never holds a newline; a long TOML string is no file name either
        # (os.stat raises ENAMETOOLONG on it).
        looks_like_toml = "\n" in scenario or (("=" in scenario or "[" in scenario) and not _is_file(scenario))
        if looks_like_toml:
            return scenario_from_toml(scenario, overrides=overrides)
        return load_scenario(scenario, overrides=overrides)
    raise ScenarioError(f"scenario: {type(scenario).__name__} is not a path, TOML string, dict or Scenario")


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


# --- overrides (--set key=value, run(**overrides)) ---------------------------------------

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _split_path(key: str) -> list[str | int]:
    """``"flows[0].cc"`` / ``"flows.0.cc"`` / ``"flows__0__cc"`` → ``["flows", 0, "cc"]``."""
    text = key.replace("__", ".")
    parts: list[str | int] = []
    position = 0
    for match in _PATH_PART.finditer(text):
        between = text[position : match.start()]
        if between not in ("", "."):
            raise ScenarioError(f"--set: {key!r} is not a key path; expected e.g. 'bottleneck.rate' or 'flows[0].cc'")
        name, index = match.groups()
        parts.append(int(index) if index is not None else int(name) if name.isdigit() else name)
        position = match.end()
    if not parts or text[position:] not in ("",):
        raise ScenarioError(f"--set: {key!r} is not a key path; expected e.g. 'bottleneck.rate' or 'flows[0].cc'")
    return parts


def parse_override(assignment: str) -> tuple[str, Any]:
    """``"flows[0].count=3"`` → ``("flows[0].count", 3)``. Values are read as TOML when they
    parse (numbers, booleans, quoted strings, inline tables), else taken as plain strings
    (``100Mbit``, ``bfifo limit 1000``)."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ScenarioError(f"--set: {assignment!r} is not key=value; expected e.g. bottleneck.rate=50Mbit")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw
    except (ValueError, RecursionError):  # the int-str limit, or nesting too deep
        raise ScenarioError(
            f"{show(key.strip())}: {show(raw)} is a number with too many digits or nested too deeply"
        ) from None
    return key.strip(), value


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``data`` with each ``path → value`` of ``overrides`` set.

    Missing tables are created; an index one past the end of a list appends an entry.
    """
    result: dict[str, Any] = copy.deepcopy(dict(data))
    for key, value in overrides.items():
        parts = _split_path(key)
        node: Any = result
        walked = ""
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            shown = f"{walked}[{part}]" if isinstance(part, int) else (f"{walked}.{part}" if walked else part)
            if isinstance(part, int):
                if not isinstance(node, list):
                    raise ScenarioError(f"{key}: {walked or 'scenario'} is not a list; cannot index it with [{part}]")
                if part == len(node):
                    # One past the end appends an entry: flows[2].rtt=10ms adds a third flow.
                    node.append(value if last else {})
                    if last:
                        break
                elif not 0 <= part < len(node):
                    raise ScenarioError(
                        f"{key}: no such entry; {walked} has {len(node)} (index 0..{len(node)} to change or append one)"
                    )
            elif not isinstance(node, dict):
                raise ScenarioError(f"{key}: {walked} is not a table; set it as a whole instead, e.g. {walked}='...'")
            if last:
                node[part] = value
            else:
                if isinstance(node, dict) and part not in node:
                    node[part] = {}
                node = node[part]
            walked = shown
    return result

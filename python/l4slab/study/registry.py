"""The built-in studies: one folder each under ``l4slab/studies/``.

A folder ``l4slab/studies/<name>/`` is the study ``<name>`` (``l4slab study run <name>``,
``l4slab study list``) and holds:

* ``study.toml`` (required): the study file;
* ``presets.toml`` (optional): presets other study files may use as factor values,
  ``["<preset>"]`` tables of ``label = "tc template"`` (``@pam2025.queues``);
* ``report.py`` (optional): ``SECTIONS``, functions ``(StudyData, report_dir) -> list of
  Markdown lines`` that ``l4slab study report`` adds after the generic tables' header;
* any data the study's report or analysis reads (e.g. published results).

A study directory gets the sections of the built-in study named by its ``[study] report``
(default: the study itself, when it is a built-in study); every study gets the generic
report.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from ..errors import ScenarioError

__all__ = ["builtin_studies", "study_dir", "study_file", "resolve_builtin", "presets", "report_sections", "Section"]

#: A report section: (the study's catalog as :class:`~l4slab.study.catalog.StudyData`, the
#: report directory) → Markdown lines; figures and tables it writes go into the directory.
Section = Callable[[Any, Path], list[str]]


def _root() -> Path:
    return Path(str(resources.files("l4slab").joinpath("studies")))


def builtin_studies() -> list[str]:
    """Names of the studies shipped with l4slab: the folders holding a ``study.toml``."""
    return sorted(entry.name for entry in _root().iterdir() if (entry / "study.toml").is_file())


def study_dir(name: str) -> Path:
    """The folder of built-in study ``name``."""
    if name not in builtin_studies():
        raise ScenarioError(f"{name!r} is not a built-in study; built-in: {', '.join(builtin_studies())}")
    return _root() / name


def study_file(name: str) -> Path:
    return study_dir(name) / "study.toml"


@lru_cache(maxsize=1)
def presets() -> dict[str, dict[str, str]]:
    """Every built-in study's presets: preset name → {label: tc template}."""
    found: dict[str, dict[str, str]] = {}
    for name in builtin_studies():
        path = _root() / name / "presets.toml"
        if path.is_file():
            from ..scenario.load import read_toml_file  # pydantic: only when presets are read

            tables, _ = read_toml_file(path, "presets")
            found.update({preset: dict(labels) for preset, labels in tables.items()})
    return found


def report_sections(name: str | None) -> tuple[Section, ...]:
    """The report sections built-in study ``name`` adds (none without a ``report.py``)."""
    if name is None:
        return ()
    path = study_dir(name) / "report.py"
    if not path.is_file():
        return ()
    return tuple(_load_report_module(str(path), name).SECTIONS)


@lru_cache(maxsize=None)
def _load_report_module(path: str, name: str):
    """Import a study's ``report.py`` by path (study names may hold '-', so not by package)."""
    module_name = f"l4slab_study_report_{name.replace('-', '_').replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_builtin(path: str | os.PathLike[str]) -> Path:
    """A study file path as given, or the ``study.toml`` of the built-in study of that name."""
    file = Path(path)
    if not file.exists() and str(path) in builtin_studies():
        return study_file(str(path))
    return file

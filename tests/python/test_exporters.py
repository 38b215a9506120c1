"""Export formats are found by name (``l4slab.exporters``): the CLI offers one flag per
registered format, a format registered from outside is reachable the same way, and the
registry costs the CLI no data-stack import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import python_c
from l4slab import exporters
from l4slab.cli import main
from l4slab.errors import ScenarioError


def test_the_built_in_formats_are_registered_and_their_writers_load():
    assert list(exporters.EXPORTERS) == ["flent", "iperf3-json"]
    from l4slab import export

    assert exporters.exporter("flent").load() is export.to_flent
    assert exporters.exporter("iperf3-json").load() is export.to_iperf3_json


def test_an_unknown_format_is_one_line_naming_the_known_ones():
    with pytest.raises(ScenarioError) as err:
        exporters.exporter("csv")
    assert str(err.value) == "export format 'csv' is unknown (known: flent, iperf3-json)"


def test_a_registration_is_checked():
    with pytest.raises(ValueError, match="already registered"):
        exporters.register(exporters.Exporter("flent", "again", "l4slab.export:to_flent", False))
    with pytest.raises(ValueError, match="module:function"):
        exporters.register(exporters.Exporter("bad name", "x", "l4slab.export:to_flent", False))


def _write_counts(run_dir, output):
    """A test format: the run's summary keys, one per line."""
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    path = Path(output) if output is not None else Path(run_dir) / "keys.txt"
    path.write_text("\n".join(sorted(summary)) + "\n")
    return path


@pytest.fixture
def keys_format():
    exporters.register(exporters.Exporter("keys", "the summary's keys", f"{__name__}:_write_counts", False))
    yield
    del exporters.EXPORTERS["keys"]


def test_a_registered_format_is_reachable_through_the_cli(tmp_path, capsys, keys_format):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps({"b": 1, "a": 2}))
    out = tmp_path / "keys.txt"
    assert main(["export", "--keys", str(run_dir), "--output", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text() == "a\nb\n"
    # Without --output, the format's own place.
    assert main(["export", "--keys", str(run_dir)]) == 0
    assert (run_dir / "keys.txt").exists()


def test_the_cli_imports_no_data_stack_for_the_export_flags():
    code = (
        "import sys\n"
        "from l4slab.cli import _parser\n"
        "_parser().parse_args(['export', '--iperf3-json', 'x'])\n"
        "print(sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules))\n"
    )
    done = python_c(code, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout

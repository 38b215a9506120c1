"""``docs/reference.md``, generated: every scenario key, qdisc parameter, TCP flow knob and
``cc_params`` key with its default and range, from the engine's schema (:mod:`l4slab.schema`),
the ``tc`` spelling (:mod:`l4slab.qdisc.spelling`) and the scenario model
(:mod:`l4slab.scenario.model`). Nothing here is written by hand: regenerate with

    python -m l4slab.reference > docs/reference.md

``tests/python/test_docs.py`` fails when the committed file differs from what this prints.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable

from . import schema, units
from .schema import ParamKind, ParamSpec

__all__ = ["render"]

_UNIT = {
    ParamKind.TIME_NS: "time",
    ParamKind.BYTES: "bytes",
    ParamKind.PACKETS: "packets",
    ParamKind.RATE_BPS: "bit/s",
    ParamKind.INT: "integer",
    ParamKind.FLOAT: "number",
    ParamKind.BOOL: "true/false",
    ParamKind.CHOICE: "choice",
    ParamKind.OBJECT: "table",
}


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(spec: ParamSpec, value: Any) -> str:
    if value is None:
        return "unset"
    if spec.kind is ParamKind.TIME_NS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return units.format_time(int(value))
    if spec.kind is ParamKind.BOOL:
        return "true" if value else "false"
    if spec.kind is ParamKind.RATE_BPS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return units.format_rate(int(value))
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e18 else f"{value:g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _range(spec: ParamSpec) -> str:
    if spec.choices:
        return ", ".join(f"`{c}`" for c in spec.choices)
    if spec.min is None and spec.max is None:
        return ""
    low = "" if spec.min is None else _value(spec, spec.min)
    high = "" if spec.max is None else _value(spec, spec.max)
    return f"{low} – {high}".strip()


def _param_rows(specs: Iterable[tuple[str, ParamSpec]]) -> list[str]:
    rows = ["| key | unit | default | range | meaning |", "|---|---|---|---|---|"]
    for key, spec in specs:
        rows.append(
            f"| `{key}` | {_UNIT[spec.kind]} | {_cell(_value(spec, spec.default))} | {_cell(_range(spec))} "
            f"| {_cell(spec.doc)} |"
        )
    return rows


#: Meanings of scenario keys whose model field has no description (README "A scenario").
_KEY_DOCS = {
    "name": "the scenario's name in summaries and reports",
    "duration": "simulated time",
    "seed": "seed of every random choice of the run",
    "trace_sojourn": "keep every packet's sojourn time (sojourn.parquet)",
    "bottleneck": "the forward bottleneck: an HTB class with a child qdisc",
    "rate": "HTB rate of the bottleneck (for UDP flows: the sending rate, or a % of the bottleneck)",
    "kind": "tcp (bulk transfer) or udp (constant bit rate)",
}


def _model_default(value: Any, examples: list) -> str:
    """A scenario default in the unit its examples are written in (``100000000`` → ``100ms``)."""
    if isinstance(value, bool):
        return str(value).lower()
    sample = next((e for e in examples if isinstance(e, str)), "")
    if isinstance(value, int) and sample:
        if sample.endswith("s") and not sample.endswith("/s"):
            return units.format_time(value)
        if sample.lower().endswith("bit"):
            return units.format_rate(value)
        if sample.endswith("B"):
            return f"{value}B"
    return str(value)


def _scenario_rows(model: Any) -> list[str]:
    from pydantic_core import PydanticUndefined

    rows = ["| key | default | meaning | example |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        key = info.alias or name
        if info.is_required():
            default = "required"
        elif info.default is None or info.default is PydanticUndefined:
            default = "unset"
        else:
            default = _model_default(info.default, info.examples or [])
        example = ", ".join(f"`{json.dumps(e)}`" for e in (info.examples or []))
        meaning = info.description or _KEY_DOCS.get(key, "")
        rows.append(f"| `{key}` | {_cell(default)} | {_cell(meaning)} | {_cell(example)} |")
    return rows


def _other_tables(model: Any) -> list[str]:
    """A section for every other table of a scenario (e.g. ``[capture]``), found in the model."""
    import typing

    from pydantic import BaseModel

    covered = {model.Bottleneck, model.TcpFlow, model.UdpFlow, model.UdpPragueFlow}
    out: list[str] = []
    for name, info in model.Scenario.model_fields.items():
        for sub in typing.get_args(info.annotation) or (info.annotation,):
            if isinstance(sub, type) and issubclass(sub, BaseModel) and sub not in covered:
                covered.add(sub)
                out += [f"## `[{info.alias or name}]`", "", *_scenario_rows(sub), ""]
    return out


def _limits() -> list[str]:
    """The limits on input files and on a run's memory, from the constants that enforce them."""
    from . import io, memory, records
    from .schema import memory_sizes

    sizes = memory_sizes()

    mib = 1 << 20
    return [
        "## Limits",
        "",
        "**Input files.** Every file read as input (a scenario, a study, a `base` file; in a study directory "
        "`plan.json`, `records.jsonl`, `failed/*.json`, `runs/*.parquet`; a run directory's JSON for `export` "
        "and `plot`) must be a regular file: a FIFO, a device (`/dev/zero`), a socket is refused in one line "
        "naming the file, without reading it (opened non-blocking, so a FIFO does not wait for a writer). "
        f"Text inputs hold at most {io.MAX_TEXT_FILE_BYTES // mib} MiB (a scenario listing {schema.limit('max_flows')} flows is about "
        f"2 MB, the plan of a 10 000-run study about 25 MB), a run file at most {io.MAX_RUN_FILE_BYTES >> 30} GiB "
        f"(the engine's preallocation bound); a read taking longer than {io.READ_TIMEOUT_S:g} s (a hung network "
        "file system) is one line too (`l4slab/io.py` `read_input`). In a study directory a FIFO or damaged run "
        "file is left out by readers and moved to `runs/corrupt/` and run again by `study run`; a damaged "
        "`catalog.duckdb` (a block whose checksum fails) is rebuilt from the run files on read.",
        "",
        "**Memory.** Before it runs, a run's peak memory is estimated by output kind (`l4slab/memory.py`): "
        f"bins (the engine's series, their bytes in Python and the long `flow_series` table, built twice), "
        f"sojourn traces ({memory.TRACE_BYTES_PER_PACKET + sizes['sojourn_record_bytes']} bytes a packet: "
        f"the engine's {sizes['sojourn_record_bytes']}-byte record as handed over, its columns and the table), captures "
        f"({memory.CAPTURE_BYTES_PER_PACKET} bytes a packet: the pcapng file twice), flows "
        f"(the engine's state of each, as the engine derives it from its types and publishes it in its schema: "
        f"{sizes['flow_state_bytes'] / 1000:g} kB a TCP flow built, plus its congestion controls' state, "
        f"its summary and {memory.ENGINE_FLOW_RUN_BYTES / 1000:g} kB added while the run is under way; "
        f"{memory.FLOW_OBJECT_BYTES / 1000:g} kB of Python objects after) and web records "
        f"(one row group of {records.ROW_GROUP_ROWS} records at a time, {memory.RECORD_ROW_BYTES} bytes a row, "
        f"whatever the run's length), plus the Parquet writer's working memory ({memory.WRITER_BYTES_PER_ROW} "
        f"bytes a row of the largest table, up to {memory.FIXED_BYTES // mib} MiB); the peak is the larger of "
        "the engine phase (flow state, series handed over) and the Python phase (the rest). Measured peaks of "
        "bins, traces, captures, flows and records are 0.8-1.25 of it (`tests/python/test_memory.py`). If "
        "memory runs out anyway, the engine fails in one line (its large buffers are reserved with allocations "
        "that may fail; any other allocation failing ends the process with one line), never an abort. "
        "A run whose estimate exceeds "
        "`--max-memory SIZE` (or `L4SLAB_MAX_MEMORY`), else the least "
        "of the machine's `MemAvailable`, the address space left under `ulimit -v` and the cgroup's `memory.max` "
        "headroom, is refused before it starts, in one line naming the largest kind and what to change. "
        "`l4slab study run --max-memory SIZE` bounds the runs that run at once: before any run, the `--jobs` "
        "largest pending estimates together must fit, and each worker checks its own run again when it starts "
        "(a refused run is a failed run with that line); `study run-one --max-memory` checks its one run.",
        "",
        "**`l4slab query`** reads the study only: the catalog opened read-only, DuckDB's file access off "
        "(`enable_external_access = false`, only the study's verified run files readable, the configuration "
        "locked), and only `SELECT` and `EXPLAIN` statements; `COPY ... TO`, `ATTACH`, `INSTALL`, `SET` are "
        "refused in one line. `--allow-files` runs any SQL with DuckDB's defaults.",
        "",
    ]


def render() -> str:
    """The reference page as Markdown."""
    from .qdisc.spelling import REGISTRY
    from .scenario import model

    engine = schema.engine_schema()
    out = [
        "# Reference: scenario keys, qdisc parameters, TCP knobs and `cc_params`",
        "",
        "Generated by `python -m l4slab.reference > docs/reference.md` from the engine's schema",
        f"(engine {engine.version}, model version {engine.model_version}); do not edit by hand. Times in engine units "
        "are nanoseconds and are",
        'shown here with a unit; in a scenario write them with one (`"10ms"`). The README explains units,',
        "BDP buffers and the `tc` syntax.",
        "",
        "## Scenario (top level)",
        "",
        *_scenario_rows(model.Scenario),
        "",
        "## `[bottleneck]` and `[reverse_bottleneck]`",
        "",
        *_scenario_rows(model.Bottleneck),
        "",
        '## `[[flows]]` with `kind = "tcp"`',
        "",
        *_scenario_rows(model.TcpFlow),
        "",
        '## `[[flows]]` with `kind = "udp"`',
        "",
        *_scenario_rows(model.UdpFlow),
        "",
        '## `[[flows]]` with `kind = "udp_prague"`',
        "",
        *_scenario_rows(model.UdpPragueFlow),
        "",
        *_other_tables(model),
        "## Bounds",
        "",
        "What the engine refuses beyond (`config.rs`, published as the schema's `limits`; the front end",
        "reads them from there, with the defaults of the sizes a scenario may leave unset, `*_default`).",
        "",
        "| bound | value |",
        "|---|---|",
        *(f"| `{name}` | {value:g} |" for name, value in engine.limits.items() if not name.endswith("_default")),
        "",
        "## TCP flow knobs in the engine",
        "",
        "What a TCP flow's keys become in the engine config, with the engine's defaults and ranges.",
        "",
        *_param_rows(sorted(engine.tcp_flow.items())),
        "",
        "## Qdiscs",
        "",
        'Each qdisc\'s parameters as `tc` writes them (`qdisc = "KIND key value ..."`, or a table); flags',
        "are written as their words (`ecn`/`noecn`). Defaults are Linux's (each qdisc's `*_init`).",
        "",
    ]
    for kind in sorted(engine.qdiscs):
        spec = engine.qdiscs[kind]
        spelled = REGISTRY.get(kind)
        out += [f"### `{kind}`", "", _cell(spec.doc), ""]
        if spec.classes:
            out += [f"Queues (classes): {', '.join(f'`{c}`' for c in spec.classes)}.", ""]
        rows = ["| tc keyword | unit | default | range | meaning |", "|---|---|---|---|---|"]
        params = spelled.params if spelled is not None else ()
        covered = set()
        for param in params:
            p = param.spec
            covered.add(param.engine_field)
            words = "/".join(f"`{w}`" for w in param.tc_words)
            default = param.format(p.default) if p.default is not None and param.is_flag else _value(p, p.default)
            rows.append(f"| {words} | {_UNIT[p.kind]} | {_cell(default)} | {_cell(_range(p))} | {_cell(p.doc)} |")
        for field, p in sorted(spec.params.items()):
            if field not in covered:
                rows.append(
                    f"| `{field}` (engine field) | {_UNIT[p.kind]} | {_cell(_value(p, p.default))} "
                    f"| {_cell(_range(p))} | {_cell(p.doc)} |"
                )
        out += rows + [""]
        if spelled is not None and spelled.buffer_param:
            out += [f"`[bottleneck] buffer` sets `{spelled.buffer_param}`.", ""]
        if spelled is not None and spelled.not_simulated:
            refused = ", ".join(f"`{k}`" for k in sorted(spelled.not_simulated))
            out += [f"Refused (not simulated): {refused}.", ""]
    out += [
        "## Congestion controls and their `cc_params`",
        "",
        '`cc = "NAME"` on a TCP flow; module parameters in `cc_params = {key = value, ...}`.',
        "",
    ]
    for name in sorted(engine.congestion_controls):
        cc = engine.congestion_controls[name]
        flags = ", ".join(cc.flags) or "none"
        receiver = ", ".join(f"`{k} = {json.dumps(v)}`" for k, v in sorted(cc.receiver_defaults.items())) or "none"
        out += [f"### `{name}`", "", _cell(cc.doc), "", f"Flags: {flags}. Receiver defaults: {receiver}.", ""]
        if cc.params:
            out += [*_param_rows(sorted(cc.params.items())), ""]
        else:
            out += ["No `cc_params`.", ""]
    out += _limits()
    out += ["## Result metrics", "", "Columns of each result table (docs/outputs.md explains them).", ""]
    for table, names in sorted(engine.metrics.items()):
        out += [f"* `{table}`: " + ", ".join(f"`{n}`" for n in names)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())

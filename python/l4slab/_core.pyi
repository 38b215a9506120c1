"""Type stubs of the compiled engine binding (crates/l4slab-py/src/lib.rs), function for function."""

def simulate(config_json: str, records_dir: str | None = None) -> tuple[str, float, list[tuple[str, bytes]]]:
    """Run a resolved engine config (JSON); return (results JSON, engine wall seconds, the
    files the run's measurement writers wrote beside the results as (name, bytes), e.g.
    ``capture.pcapng``).

    With ``records_dir``, the per-request and closed-flow records are streamed into spill
    files there (``requests-<source>.jsonl``, ``flow_records.jsonl``: one JSON array of
    about ``RECORD_CHUNK`` records per line, more when a long-open request held
    records back) and left out of the results JSON.
    Raises ValueError when the engine rejects the config or fails during the run.
    """

def check(config_json: str) -> None:
    """Validate a resolved engine config; raises ValueError with a one-line message."""

def check_qdisc(qdisc_json: str) -> None:
    """Validate one qdisc config (engine units): its ranges and its rules across
    parameters; raises ValueError with the engine's one-line message naming the field."""

def emu_main(args: list[str]) -> int:
    """The emulator's command line (``l4slab-emu run|cleanup ...``) in this process; the exit status."""

def udp_prague_main(args: list[str]) -> int:
    """The UDP-Prague program's command line (``l4slab-udp-prague send|recv ...``) in this process."""

def version() -> str:
    """The engine crate's package version (run ids hash the model version, in ``schema()``)."""

def schema() -> str:
    """The engine's self-description (crates/l4slab-core/src/schema.rs ``EngineSchema``) as JSON."""

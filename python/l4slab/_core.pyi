"""Type stubs of the compiled engine binding (crates/l4slab-py/src/lib.rs), function for function."""

def simulate(config_json: str) -> tuple[str, float]:
    """Run a resolved engine config (JSON); return (results JSON, engine wall seconds).

    Raises ValueError when the engine rejects the config or fails during the run.
    """

def check(config_json: str) -> None:
    """Validate a resolved engine config; raises ValueError with a one-line message."""

def version() -> str:
    """Engine version."""

def schema() -> str:
    """The engine's self-description (crates/l4slab-core/src/schema.rs ``EngineSchema``) as JSON."""

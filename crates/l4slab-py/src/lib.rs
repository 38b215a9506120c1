//! Thin PyO3 binding of the l4slab engine: JSON in, JSON out.
//!
//! The Python package (`l4slab`) resolves scenarios and shapes the results into
//! DataFrames; this module only crosses the language boundary and releases the GIL
//! while the engine runs, so a process pool or Dask worker threads run in parallel.
//! Every engine call goes through `l4slab_core::guard::catch_panic`: an engine panic
//! is a one-line `ValueError` (the package's `EngineError`), never an abort.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Run one resolved scenario (engine JSON, see `l4slab_core::config`).
/// Returns `(results_json, engine_wall_seconds, capture)`: `capture` is the pcapng
/// file (bytes) when the scenario asked for a packet capture, else None.
#[pyfunction]
fn simulate(py: Python<'_>, config_json: &str) -> PyResult<(String, f64, Option<Py<PyBytes>>)> {
    let config: l4slab_core::ScenarioConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("engine config: {e}")))?;
    let out = py.allow_threads(move || {
        let start = std::time::Instant::now();
        let res = l4slab_core::guard::catch_panic(|| l4slab_core::run(&config));
        let wall = start.elapsed().as_secs_f64();
        res.map(|r| (r, wall))
    });
    let (mut results, wall) = out.map_err(PyValueError::new_err)?;
    let capture = match results.capture.as_mut().map(|c| std::mem::replace(&mut c.pcapng, Ok(Vec::new()))) {
        Some(Ok(bytes)) => Some(PyBytes::new_bound(py, &bytes).unbind()),
        Some(Err(e)) => return Err(PyValueError::new_err(e)),
        None => None,
    };
    let json =
        serde_json::to_string(&results).map_err(|e| PyValueError::new_err(format!("serialising results: {e}")))?;
    Ok((json, wall, capture))
}

/// Validate a resolved scenario without running it; raises ValueError with a
/// one-line message naming the field.
#[pyfunction]
fn check(config_json: &str) -> PyResult<()> {
    let config: l4slab_core::ScenarioConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("engine config: {e}")))?;
    l4slab_core::guard::catch_panic(|| config.validate()).map_err(PyValueError::new_err)
}

/// Engine version (part of a run's identity).
#[pyfunction]
fn version() -> &'static str {
    l4slab_core::VERSION
}

/// The engine's schema as JSON: every qdisc's and congestion control's parameters
/// (default, range, doc), the TCP flow knobs and the metric names.
#[pyfunction]
fn schema() -> PyResult<String> {
    serde_json::to_string(&l4slab_core::engine_schema())
        .map_err(|e| PyValueError::new_err(format!("serialising the schema: {e}")))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    Ok(())
}

//! Thin PyO3 binding of the l4slab engine: JSON in, JSON out.
//!
//! The Python package (`l4slab`) resolves scenarios and shapes the results into
//! DataFrames; this module only crosses the language boundary and releases the GIL
//! while the engine runs, so a process pool or Dask worker threads run in parallel.
//! Every engine call goes through `l4slab_core::guard::catch_panic`: an engine panic
//! is a one-line `ValueError` (the package's `EngineError`), never an abort.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use l4slab_core::results::{FlowSummary, RecordSink, RequestRecord};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The records of a streaming run as spill files in a directory the caller owns:
/// each chunk the engine hands over (about `RECORD_CHUNK` records, plus any a long-open request held back) is one line, a
/// JSON array of records, of `requests-<source>.jsonl` or `flow_records.jsonl`. The
/// Python side reads them a line at a time into Parquet row groups
/// (`l4slab.records`), so neither side holds all of a run's records.
struct SpillSink {
    dir: PathBuf,
    files: BTreeMap<String, BufWriter<File>>,
}

impl SpillSink {
    /// Append one chunk (`to_json` writes its JSON array) as a line of file `name`.
    fn write(
        &mut self,
        name: String,
        to_json: impl FnOnce(&mut BufWriter<File>) -> serde_json::Result<()>,
    ) -> Result<(), String> {
        let path = self.dir.join(&name);
        let fail = |e: &dyn std::fmt::Display| format!("records spill file {}: {e}", path.display());
        if !self.files.contains_key(&name) {
            let file = File::create(&path).map_err(|e| fail(&e))?;
            self.files.insert(name.clone(), BufWriter::with_capacity(1 << 16, file));
        }
        let w = self.files.get_mut(&name).expect("inserted above");
        to_json(w).map_err(|e| fail(&e))?;
        w.write_all(b"\n").map_err(|e| fail(&e))
    }
}

impl RecordSink for SpillSink {
    fn requests(&mut self, source: u32, chunk: &[RequestRecord]) -> Result<(), String> {
        self.write(format!("requests-{source}.jsonl"), |w| serde_json::to_writer(w, chunk))
    }
    fn flow_records(&mut self, chunk: &[FlowSummary]) -> Result<(), String> {
        self.write("flow_records.jsonl".to_string(), |w| serde_json::to_writer(w, chunk))
    }
    fn finish(&mut self) -> Result<(), String> {
        for (name, w) in self.files.iter_mut() {
            w.flush().map_err(|e| format!("records spill file {}: {e}", self.dir.join(name).display()))?;
        }
        Ok(())
    }
}

/// The files a run's measurement writers wrote, by name.
type WriterFiles = Vec<(&'static str, Py<PyBytes>)>;

/// Run one resolved scenario (engine JSON, see `l4slab_core::config`).
/// Returns `(results_json, engine_wall_seconds, files)`: `files` are the files the run's
/// measurement writers wrote beside the results, as `(name, bytes)` (`capture.pcapng`
/// when the scenario asked for a packet capture). With
/// `records_dir`, the per-request and closed-flow records are streamed into spill
/// files there ([`SpillSink`]) and the results' `requests` / `flow_records` are empty.
#[pyfunction]
#[pyo3(signature = (config_json, records_dir=None))]
fn simulate(py: Python<'_>, config_json: &str, records_dir: Option<PathBuf>) -> PyResult<(String, f64, WriterFiles)> {
    let config: l4slab_core::ScenarioConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("engine config: {e}")))?;
    let out = py.allow_threads(move || {
        let start = std::time::Instant::now();
        let res = l4slab_core::guard::catch_panic(|| match records_dir {
            Some(dir) => l4slab_core::run_streaming(&config, Box::new(SpillSink { dir, files: BTreeMap::new() })),
            None => l4slab_core::run(&config),
        });
        let wall = start.elapsed().as_secs_f64();
        res.map(|r| (r, wall))
    });
    let (mut results, wall) = out.map_err(PyValueError::new_err)?;
    let mut files = Vec::with_capacity(results.files.len());
    for file in std::mem::take(&mut results.files) {
        let bytes = file.bytes.map_err(PyValueError::new_err)?;
        files.push((file.name, PyBytes::new_bound(py, &bytes).unbind()));
    }
    let json =
        serde_json::to_string(&results).map_err(|e| PyValueError::new_err(format!("serialising results: {e}")))?;
    Ok((json, wall, files))
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

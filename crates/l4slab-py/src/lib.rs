//! Thin PyO3 binding of the l4slab engine: JSON in, JSON and columns out.
//!
//! The Python package (`l4slab`) resolves scenarios and shapes the results into
//! DataFrames; this module only crosses the language boundary and releases the GIL
//! while the engine runs, so a process pool or Dask worker threads run in parallel.
//! The results cross as JSON, except the per-bin series and the per-packet trace:
//! those cross as columns of little-endian bytes ([`take_columns`]), 8 bytes a value
//! (as the engine holds them) rather than ~20 characters of JSON and a 32-byte Python
//! float each, so a run's memory is a few copies of its engine arrays
//! (`l4slab_core::config::memory_estimate`).
//! Every engine call goes through `l4slab_core::guard::catch_panic`: an engine panic
//! is a one-line `ValueError` (the package's `EngineError`), never an abort.
//! An allocation failure is one line too: the run's large buffers are reserved with
//! allocations that may fail (`l4slab_core::guard::try_vec`, a `ValueError`); any other
//! allocation failing reaches [`OneLineOutOfMemory`], which prints one line and exits
//! (Rust's default is a message and `abort`, exit 134).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use l4slab_core::results::{FlowSummary, RecordSink, RequestRecord, RunResults};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// The global allocator of the engine's allocations: the system's, except that an
/// allocation failing outside a fallible reservation (`guard::allocation_may_fail`)
/// writes one line to stderr and ends the process with exit status 1 (the CLI's
/// engine-error status) instead of Rust's abort. Nothing here allocates: the line is
/// built on the stack and written with `write(2)`; `_exit` skips the handlers that
/// could allocate. Freed memory goes back as the system's allocator does it.
struct OneLineOutOfMemory;

extern "C" {
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn _exit(status: i32) -> !;
}

#[cold]
fn out_of_memory(size: usize) -> ! {
    let mut line = [0u8; 320];
    let mut n = 0;
    let mut put = |bytes: &[u8]| {
        let k = bytes.len().min(line.len() - n);
        line[n..n + k].copy_from_slice(&bytes[..k]);
        n += k;
    };
    put(b"l4slab: error: engine: out of memory: an allocation of ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut rest = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    put(&digits[i..]);
    put(b" bytes failed; the run needs more memory than this process may use (see `l4slab run --max-memory`)\n");
    unsafe {
        write(2, line.as_ptr(), n);
        _exit(1)
    }
}

#[inline]
fn checked(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() && !l4slab_core::guard::allocation_may_fail() {
        out_of_memory(size)
    }
    ptr
}

unsafe impl GlobalAlloc for OneLineOutOfMemory {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { System.alloc(layout) }, layout.size())
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        checked(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

#[global_allocator]
static GLOBAL: OneLineOutOfMemory = OneLineOutOfMemory;

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

/// A numeric column as little-endian bytes (a `numpy.frombuffer` of `dtype`).
trait Column {
    const DTYPE: &'static str;
    const SIZE: usize;
    fn put(&self, out: &mut [u8]);
}
impl Column for f64 {
    const DTYPE: &'static str = "<f8";
    const SIZE: usize = 8;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes())
    }
}
impl Column for u64 {
    // Counters stay below 2^63: int64, as the JSON path gave them.
    const DTYPE: &'static str = "<i8";
    const SIZE: usize = 8;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes())
    }
}
impl Column for u32 {
    const DTYPE: &'static str = "<u4";
    const SIZE: usize = 4;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes())
    }
}
impl Column for u8 {
    const DTYPE: &'static str = "<u1";
    const SIZE: usize = 1;
    fn put(&self, out: &mut [u8]) {
        out[0] = *self
    }
}

/// Move `values` into `columns[path] = (dtype, bytes, None)`; the engine's vector is
/// freed as soon as its bytes exist, so the hand-over holds one column twice at most.
fn put<T: Column>(py: Python<'_>, columns: &Bound<'_, PyDict>, path: String, values: Vec<T>) -> PyResult<()> {
    let bytes = PyBytes::new_bound_with(py, values.len() * T::SIZE, |buf| {
        for (value, out) in values.iter().zip(buf.chunks_exact_mut(T::SIZE)) {
            value.put(out);
        }
        Ok(())
    })?;
    drop(values);
    columns.set_item(path, (T::DTYPE, bytes, py.None()))
}

/// Take the per-bin series and the per-packet trace out of `results` into a dict
/// `path -> (dtype, bytes, names)`: `time_s`, `flow_series.<i>.<name>`,
/// `bottleneck_series.<name>`, `bottleneck_series.sojourn_class_ms.<k>`,
/// `sojourn_trace.<name>`; `names` is None, except for `cc_mode`, whose bytes are u8
/// codes into `names`. The JSON keeps the always-present series as `[]` (their place
/// in the table); Python puts each column where its path says (`l4slab.engine`).
fn take_columns<'py>(py: Python<'py>, results: &mut RunResults) -> PyResult<Bound<'py, PyDict>> {
    use std::mem::take;
    let columns = PyDict::new_bound(py);
    put(py, &columns, "time_s".into(), take(&mut results.time_s))?;
    for (i, s) in results.flow_series.iter_mut().enumerate() {
        let f = |name: &str| format!("flow_series.{i}.{name}");
        put(py, &columns, f("goodput_mbps"), take(&mut s.goodput_mbps))?;
        put(py, &columns, f("throughput_mbps"), take(&mut s.throughput_mbps))?;
        put(py, &columns, f("srtt_ms"), take(&mut s.srtt_ms))?;
        put(py, &columns, f("rtt_ms"), take(&mut s.rtt_ms))?;
        put(py, &columns, f("cwnd"), take(&mut s.cwnd))?;
        put(py, &columns, f("alpha"), take(&mut s.alpha))?;
        put(py, &columns, f("pacing_rate_mbps"), take(&mut s.pacing_rate_mbps))?;
        put(py, &columns, f("payload_bytes"), take(&mut s.payload_bytes))?;
        put(py, &columns, f("ce_packets"), take(&mut s.ce_packets))?;
        put(py, &columns, f("retransmits"), take(&mut s.retransmits))?;
        put(py, &columns, f("drops"), take(&mut s.drops))?;
        put(py, &columns, f("marks"), take(&mut s.marks))?;
        // The CC-state series exist only for a CC that reports one (empty otherwise).
        for (name, values) in [
            ("bw_est_mbps", &mut s.bw_est_mbps),
            ("min_rtt_ms", &mut s.min_rtt_ms),
            ("pacing_gain", &mut s.pacing_gain),
            ("inflight_hi", &mut s.inflight_hi),
            ("inflight_lo", &mut s.inflight_lo),
        ] {
            if !values.is_empty() {
                put(py, &columns, f(name), take(values))?;
            }
        }
        if !s.cc_mode.is_empty() {
            let modes = take(&mut s.cc_mode);
            let mut names: Vec<&'static str> = Vec::new();
            let codes: Vec<u8> = modes
                .iter()
                .map(|m| match names.iter().position(|n| n == m) {
                    Some(k) => k as u8,
                    None => {
                        names.push(m);
                        (names.len() - 1) as u8
                    }
                })
                .collect();
            drop(modes);
            let bytes = PyBytes::new_bound(py, &codes);
            columns.set_item(f("cc_mode"), ("<u1", bytes, PyList::new_bound(py, names)))?;
        }
    }
    let b = &mut results.bottleneck_series;
    let f = |name: &str| format!("bottleneck_series.{name}");
    put(py, &columns, f("utilisation"), take(&mut b.utilisation))?;
    put(py, &columns, f("sojourn_ms"), take(&mut b.sojourn_ms))?;
    put(py, &columns, f("backlog_bytes"), take(&mut b.backlog_bytes))?;
    put(py, &columns, f("backlog_packets"), take(&mut b.backlog_packets))?;
    put(py, &columns, f("drops"), take(&mut b.drops))?;
    put(py, &columns, f("marks"), take(&mut b.marks))?;
    put(py, &columns, f("arrivals"), take(&mut b.arrivals))?;
    for (k, values) in take(&mut b.sojourn_class_ms).into_iter().enumerate() {
        put(py, &columns, f(&format!("sojourn_class_ms.{k}")), values)?;
    }
    if let Some(t) = results.sojourn_trace.as_mut() {
        put(py, &columns, "sojourn_trace.time_s".into(), take(&mut t.time_s))?;
        put(py, &columns, "sojourn_trace.flow".into(), take(&mut t.flow))?;
        put(py, &columns, "sojourn_trace.class".into(), take(&mut t.class))?;
        put(py, &columns, "sojourn_trace.sojourn_ms".into(), take(&mut t.sojourn_ms))?;
    }
    Ok(columns)
}

/// The files a run's measurement writers wrote, by name.
type WriterFiles = Vec<(&'static str, Py<PyBytes>)>;

/// Run one resolved scenario (engine JSON, see `l4slab_core::config`).
/// Returns `(results_json, columns, engine_wall_seconds, files)`: `columns` holds the
/// series and the trace ([`take_columns`]); `files` are the files the run's
/// measurement writers wrote beside the results, as `(name, bytes)` (`capture.pcapng`
/// when the scenario asked for a packet capture). With
/// `records_dir`, the per-request and closed-flow records are streamed into spill
/// files there ([`SpillSink`]) and the results' `requests` / `flow_records` are empty.
#[pyfunction]
#[pyo3(signature = (config_json, records_dir=None))]
fn simulate<'py>(
    py: Python<'py>,
    config_json: &str,
    records_dir: Option<PathBuf>,
) -> PyResult<(String, Bound<'py, PyDict>, f64, WriterFiles)> {
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
    let columns = take_columns(py, &mut results)?;
    let json =
        serde_json::to_string(&results).map_err(|e| PyValueError::new_err(format!("serialising results: {e}")))?;
    Ok((json, columns, wall, files))
}

/// Validate a resolved scenario without running it; raises ValueError with a
/// one-line message naming the field.
#[pyfunction]
fn check(config_json: &str) -> PyResult<()> {
    let config: l4slab_core::ScenarioConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("engine config: {e}")))?;
    l4slab_core::guard::catch_panic(|| l4slab_core::validate(&config)).map_err(PyValueError::new_err)
}

/// Validate one qdisc config (`{"kind": ..., field: value}` in engine units) as the
/// engine does (ranges, then the rules across fields); raises ValueError with the
/// engine's one-line message naming the field.
#[pyfunction]
fn check_qdisc(qdisc_json: &str) -> PyResult<()> {
    let qdisc: l4slab_core::qdisc::QdiscConfig =
        serde_json::from_str(qdisc_json).map_err(|e| PyValueError::new_err(format!("qdisc config: {e}")))?;
    l4slab_core::guard::catch_panic(|| qdisc.validate()).map_err(PyValueError::new_err)
}

/// The emulator's command line (`l4slab-emu run|cleanup ...`, docs/emulator.md) in this
/// process: what `python -m l4slab._emu` runs, so the wheel and `pip install .` ship the
/// emulator with the extension and need no separately built binary. Returns the exit
/// status; the process is the emulator's (its signal handlers, its exit on the hard cap).
#[pyfunction]
fn emu_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| l4slab_emu::cli::main_with(args))
}

/// The project's UDP-Prague program (`l4slab-udp-prague send|recv ...`,
/// docs/udp-prague.md) in this process: what `python -m l4slab._udp_prague` and the
/// `l4slab-udp-prague` console script run, so a command flow's worked example needs no
/// cargo step after `pip install`. Returns the exit status.
#[pyfunction]
fn udp_prague_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| l4slab_emu::udp_prague_cli::main_with(args))
}

/// The engine crate's package version (a run's identity hashes the model version, in `schema()`).
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
    m.add_function(wrap_pyfunction!(check_qdisc, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(emu_main, m)?)?;
    m.add_function(wrap_pyfunction!(udp_prague_main, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    Ok(())
}

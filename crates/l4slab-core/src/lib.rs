//! # l4slab-core
//!
//! The packet-level simulation engine of l4slab: a discrete-event simulator of a
//! dumbbell network whose bottleneck qdiscs, TCP machinery and congestion controls
//! follow their Linux implementations (see `docs/architecture.md` and `docs/engine.md`).
//!
//! Layout (one concern per module, in the spirit of smoltcp):
//! - [`time`], [`rng`]: integer-nanosecond clock; seeded PRNG streams.
//! - [`event`]: the event queue (small entries, deterministic tie-break).
//! - [`packet`]: packets, ECN codepoints, TCP header fields.
//! - [`net`]: links (shaped queue, serialiser, delay line), routes, the dumbbell builder.
//! - [`qdisc`]: the [`qdisc::Qdisc`] trait (enqueue / dequeue / peek, timer), one file per
//!   qdisc and the registry (`qdisc_registry!`) with each qdisc's parameter schema.
//! - [`tcp`]: the TCP sender and receiver (Linux `tcp_input.c` / `tcp_output.c` behaviour).
//! - [`cc`]: the [`cc::CongestionControl`] trait (Linux `struct tcp_congestion_ops`), one
//!   file or folder per algorithm and [`cc::registry`], the one table of them.
//! - [`traffic`]: the [`traffic::Endpoint`] trait (TCP sender/receiver, UDP source/sink)
//!   and [`traffic::TrafficSource`]s that open flows.
//! - [`trace`]: measurement as [`trace::Observer`]s (binned recorder, sojourn trace).
//! - [`sim`]: the event loop; [`run`] is the entry point.
//! - [`config`], [`results`]: the serde types at the boundary with the Python front end.
//! - [`memory`]: what a run holds in memory, from the engine's own type sizes (published in the schema).
//! - [`model`]: the model version, bumped with every change of the result corpus.
//! - [`schema`]: the self-description ([`engine_schema`]) the front end derives its
//!   registries, defaults and ranges from; [`schema::check_params`] enforces the ranges.

pub mod cc;
pub mod config;
pub mod event;
pub mod guard;
pub mod memory;
pub mod model;
pub mod net;
pub mod packet;
pub mod qdisc;
pub mod results;
pub mod rng;
pub mod schema;
pub mod sim;
pub mod tcp;
pub mod time;
pub mod trace;
pub mod traffic;

pub use config::ScenarioConfig;
pub use results::RunResults;

/// The package version (the crate's). What a result depends on is the model version
/// ([`model::MODEL_VERSION`]), part of a run's identity in the results store.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use model::{MODEL_CORPUS_DIGEST, MODEL_VERSION};

/// The engine's self-description (qdisc and CC parameters, TCP knobs, metric names)
/// that the front end reads; assembled here, at the root, so that `schema` stays a
/// leaf module every other module can use.
pub fn engine_schema() -> schema::EngineSchema {
    schema::EngineSchema {
        version: VERSION,
        model_version: MODEL_VERSION,
        model_corpus_digest: MODEL_CORPUS_DIGEST,
        model_id: model::model_id(),
        qdiscs: qdisc::specs(),
        congestion_controls: cc::specs(),
        tcp_flow: config::tcp_flow_params(),
        metrics: results::metric_names(),
        limits: config::limits(),
        ecn_modes: cc::EcnMode::ALL.iter().map(|m| m.name()).collect(),
        memory: memory::sizes(),
        receiver_rcvbufs: tcp::rcvbuf::receiver_rcvbufs(),
    }
}

/// Every check of a scenario: its fields (`ScenarioConfig::validate`) and its
/// topology's (`net::check_topology`: the builder's parameters, the flows' hops).
pub fn validate(config: &ScenarioConfig) -> Result<(), String> {
    config.validate()?;
    net::check_topology(config)
}

/// Validate and run a scenario to completion.
pub fn run(config: &ScenarioConfig) -> Result<RunResults, String> {
    validate(config)?;
    let mut sim = sim::Simulation::new(config)?;
    sim.run();
    sim.check_conservation()?;
    Ok(sim.results())
}

/// [`run`], streaming the per-request and closed-flow records into `sink` in bounded
/// chunks (`results::RecordSink`) as the run makes them final: the returned results'
/// `requests` and `flow_records` are empty, and the memory those records take no
/// longer grows with the run's length. Everything else is as [`run`] gives it.
pub fn run_streaming(config: &ScenarioConfig, sink: Box<dyn results::RecordSink>) -> Result<RunResults, String> {
    validate(config)?;
    let mut sim = sim::Simulation::new(config)?;
    sim.set_sink(sink);
    sim.run();
    sim.finish_sink()?;
    sim.check_conservation()?;
    Ok(sim.results())
}

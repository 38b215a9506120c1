//! The engine's integration tests, one test binary: each file of `tests/` is a module
//! here, and its tests are named `FILE::TEST` (`cargo test -p l4slab-core --profile
//! test-fast --test engine -- --list`; one file's tests: `... --test engine -- host_timer::`).
//! One binary links the engine once instead of once per file; `common/` holds the shared
//! helpers and the counting global allocator of the allocation tests, `corpus/` the
//! bit-identity corpus.

mod common;

#[global_allocator]
static GLOBAL: common::counting_alloc::Counting = common::counting_alloc::Counting;

mod architecture;
mod bbr;
mod bbr2;
mod bbr3;
mod codel_clock;
mod corpus;
mod delay_cells;
mod fifo_share;
mod host_ackbatch;
mod host_fq;
mod host_gro;
mod host_timer;
mod host_tso;
mod hot_loop_alloc;
mod l4s;
mod memory_sizes;
mod pam_limits;
mod prague_liveness;
mod properties;
mod psh;
mod qdisc_scenarios;
mod scenarios;
mod slow_start_acks;
mod storm;
mod tcp_flow;
mod tcp_loss_recovery;
mod topology;
mod udp_prague;
mod web;
mod web_alloc;
mod web_stream;

/// Cargo builds only this file's crate (`autotests = false`): a test file not listed
/// here would never run.
#[test]
fn every_test_file_is_a_module_of_the_engine_test_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = include_str!("engine.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "engine" && !root.lines().any(|l| l == format!("mod {stem};")) {
                missing.push(name);
            }
        }
    }
    assert!(missing.is_empty(), "tests/{missing:?} not declared as `mod` in tests/engine.rs");
}

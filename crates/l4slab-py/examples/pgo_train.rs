//! The profile-guided build's training runs (`tools/pgo-profile`): each argument a bench
//! case (`crates/l4slab-core/examples/cases/mod.rs`), an engine config file or a directory of
//! them, run once.
//!
//! It is an example of this crate, not of `l4slab-core`, because a profile applies only to
//! the functions whose symbols it names: built here, the engine and its dependencies get the
//! features, and so the symbol hashes, that they have in the extension (the engine's own
//! examples also unify its dev-dependencies' features). It reads no clock and prints only
//! counts, so the profile is the same on every run.

#[path = "../../l4slab-core/examples/cases/mod.rs"]
mod cases;

fn main() {
    for (name, value) in cases::configs(std::env::args().skip(1).collect()) {
        let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(value).expect("training config");
        let r = l4slab_core::run(&cfg).expect("training run");
        println!("{name}: {} events", r.events);
    }
}

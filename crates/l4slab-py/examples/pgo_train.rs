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
    if let Err(error) = train(std::env::args().skip(1).collect()) {
        eprintln!("pgo_train: error: {error}");
        std::process::exit(2);
    }
}

fn train(args: Vec<String>) -> Result<(), String> {
    for (name, value) in cases::configs(args)? {
        let cfg = cases::engine_config(&name, value)?;
        let r = l4slab_core::run(&cfg).map_err(|e| format!("{name}: {e}"))?;
        println!("{name}: {} events", r.events);
    }
    Ok(())
}

//! `l4slab-emu`: the emulator's command line (the process protocol of
//! `docs/emulator.md`).
//!
//! ```text
//! l4slab-emu run --config CONFIG.json --out DIR --ready-file PATH [--prefix l4se] [--command-flows 0,2]
//! l4slab-emu cleanup [--prefix l4se] [--all]
//! ```

fn main() {
    let code = l4slab_emu::cli::main_with(std::env::args().skip(1).collect());
    std::process::exit(code);
}

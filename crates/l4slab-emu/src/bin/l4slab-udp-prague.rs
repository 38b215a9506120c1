//! `l4slab-udp-prague`: the project's UDP-Prague sender and receiver (`send|recv`), the
//! command line of [`l4slab_emu::udp_prague_cli`].

fn main() {
    std::process::exit(l4slab_emu::udp_prague_cli::main_with(std::env::args().skip(1).collect()));
}

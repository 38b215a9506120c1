//! # l4slab-emu
//!
//! The emulator: the scenario's links and qdiscs (the engine's own
//! `Qdisc<P>` code, driven with real IPv4 packets and the wall clock) between a
//! sender and a receiver network namespace per flow, each with a TUN device, in the
//! manner of Mahimahi (Netravali et al., "Mahimahi: Accurate Record-and-Replay for
//! HTTP", USENIX ATC 2015: link emulation in user space between namespaces).
//!
//! - [`packet`]: [`packet::EmuPacket`], a pooled real-packet buffer implementing
//!   `QdiscPacket` (IPv4 ECN field read/written, header checksum fixed, RFC 1624).
//! - [`netns`]: namespaces, TUN devices, addresses, routes, sysctls, the cleanup guard.
//! - [`clock`]: `CLOCK_MONOTONIC`, sleeping until a deadline (ppoll) then spinning.
//! - [`tap`]: each TUN's packet tap, the kernel's stamp of when a packet reached it.
//! - [`link`]: a shaped queue (HTB class + qdisc, `sch_htb.c`) and constant delay lines.
//! - [`measure`]: the bottleneck measurement into the engine's `RunResults`.
//! - [`forward`]: the forwarding loop.
//! - [`emu`]: the `run` and `cleanup` commands (checks, setup, loop, outputs).
//! - [`cli`]: their command line, shared by the binary and the Python extension.
//! - [`udp_prague_cli`]: the UDP-Prague sender/receiver program (`l4slab-udp-prague`),
//!   the engine's algorithm over real UDP sockets, likewise shared.

pub mod cli;
pub mod clock;
pub mod emu;
pub mod forward;
pub mod link;
pub mod measure;
pub mod netns;
pub mod packet;
pub mod tap;
pub mod udp_prague_cli;

//! Seeded random streams.
//!
//! Every random choice in a run comes from the scenario seed. Each consumer gets its
//! own stream (PCG-64 with a stream id), so adding a random choice in one component
//! does not shift the numbers another component draws.

use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// Stream ids of the engine's consumers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Flow start offsets.
    StartJitter,
    /// The bottleneck qdisc (PIE/DualPI2 coin flips, FQ hash perturbation).
    Qdisc,
    /// A queue on the reverse (ACK) path.
    ReverseQdisc,
    /// The bottleneck host's timer lateness (`net::host_timer`); `ReverseHostTimer`
    /// for the reverse queue's.
    HostTimer,
    ReverseHostTimer,
    /// Hop `n` of a topology beyond the dumbbell: its qdisc and its host's timer
    /// (the dumbbell's bottleneck and reverse queue keep `Qdisc`/`HostTimer` and
    /// `ReverseQdisc`/`ReverseHostTimer`).
    HopQdisc(u32),
    HopHostTimer(u32),
    /// The loss, jitter and aggregation draws of the link with id `n` (`net/link_model.rs`).
    LinkModel(u32),
    /// The delay node's watchdog on its interface `n` (the id of that interface's
    /// delay line; `net::delay_line::NetemNode`).
    DelayNode(u32),
    /// The congestion control of flow `n` (BBR's random PROBE_BW start phase).
    Flow(u32),
    /// The request arrivals of source `n` (`config.sources[n]`).
    Arrivals(u32),
    /// The response sizes of source `n`.
    Sizes(u32),
    /// The congestion control of connection `c` of source `n`: a stream per
    /// connection, since a source reuses flow slots (`Flow(slot)` would repeat).
    Connection(u32, u32),
    /// The wake-up lateness of the sending and the receiving program of flow `n`
    /// (`traffic::udp_prague::ProgramReads`).
    SenderWake(u32),
    ReceiverWake(u32),
    /// The lateness of the sending program's pacing timer, flow `n`.
    SenderTimer(u32),
    /// The time the sending and the receiving program of flow `n` are busy with each
    /// datagram they read.
    SenderBusy(u32),
    ReceiverBusy(u32),
}

impl Stream {
    /// The stream id mixed with the seed. StartJitter and Qdisc keep the ids they
    /// always had (1, 2), so their numbers do not change; flows live above 2^32.
    pub fn id(self) -> u64 {
        match self {
            Stream::StartJitter => 1,
            Stream::Qdisc => 2,
            Stream::ReverseQdisc => 3,
            Stream::HostTimer => 4,
            Stream::ReverseHostTimer => 5,
            Stream::Flow(n) => (1 << 32) | n as u64,
            Stream::Arrivals(n) => (2 << 32) | n as u64,
            Stream::Sizes(n) => (3 << 32) | n as u64,
            Stream::DelayNode(n) => (4 << 32) | n as u64,
            Stream::HopQdisc(n) => (5 << 32) | n as u64,
            Stream::HopHostTimer(n) => (6 << 32) | n as u64,
            Stream::LinkModel(n) => (7 << 32) | n as u64,
            Stream::SenderWake(n) => (8 << 32) | n as u64,
            Stream::ReceiverWake(n) => (9 << 32) | n as u64,
            Stream::SenderTimer(n) => (10 << 32) | n as u64,
            Stream::SenderBusy(n) => (11 << 32) | n as u64,
            Stream::ReceiverBusy(n) => (12 << 32) | n as u64,
            // Sources below 2^16 (`config::MAX_SOURCES`): ids from 2^48 up, disjoint from the rest.
            Stream::Connection(n, c) => (1 << 48) | ((n as u64 & 0xFFFF) << 32) | c as u64,
        }
    }
}

/// A PRNG for `stream` of the run seeded with `seed`.
pub fn stream(seed: u64, stream: Stream) -> SimRng {
    // SplitMix64-style mixing of (seed, stream) into a 128-bit state.
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let id = stream.id();
    let a = mix(seed ^ id.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let b = mix(a ^ id);
    SimRng(Pcg64Mcg::new(((a as u128) << 64) | b as u128 | 1))
}

/// The engine's PRNG.
#[derive(Clone, Debug)]
pub struct SimRng(Pcg64Mcg);

impl SimRng {
    /// Uniform u32 (Linux `get_random_u32`).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.0.gen()
    }
    /// Uniform u64.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.gen()
    }
    /// Uniform in (0, 1]: 53 random bits, never 0 (safe under `ln`).
    #[inline]
    pub fn unit_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in [0, n]; 0 if n = 0.
    pub fn below_inclusive(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.0.gen_range(0..=n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn same_seed_same_numbers_different_streams_differ() {
        let a: Vec<u64> = (0..4).map(|_| stream(7, Stream::Qdisc).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = stream(7, Stream::Qdisc);
        let mut y = stream(7, Stream::StartJitter);
        let mut z = stream(8, Stream::Qdisc);
        let (vx, vy, vz) = (x.next_u64(), y.next_u64(), z.next_u64());
        assert_ne!(vx, vy);
        assert_ne!(vx, vz);
    }

    #[test]
    fn flow_streams_are_distinct_and_leave_the_others_unchanged() {
        // The ids of the original streams are what they were as enum discriminants.
        assert_eq!(Stream::StartJitter.id(), 1);
        assert_eq!(Stream::Qdisc.id(), 2);
        let f0 = stream(7, Stream::Flow(0)).next_u64();
        let f1 = stream(7, Stream::Flow(1)).next_u64();
        assert_ne!(f0, f1);
        assert_ne!(f0, stream(7, Stream::Qdisc).next_u64());
        assert_ne!(f0, stream(8, Stream::Flow(0)).next_u64());
        assert_eq!(f1, stream(7, Stream::Flow(1)).next_u64());
    }
}

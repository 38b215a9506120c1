//! Seeded random streams.
//!
//! Every random choice in a run comes from the scenario seed. Each consumer gets its
//! own stream (PCG-64 with a stream id), so adding a random choice in one component
//! does not shift the numbers another component draws.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Stream ids of the engine's consumers.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    /// Flow start offsets.
    StartJitter = 1,
    /// The bottleneck qdisc (PIE/DualPI2 coin flips, FQ hash perturbation).
    Qdisc = 2,
    /// A queue on the reverse (ACK) path.
    ReverseQdisc = 3,
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
    let a = mix(seed ^ (stream as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let b = mix(a ^ stream as u64);
    SimRng(Pcg64Mcg::new(((a as u128) << 64) | b as u128 | 1))
}

/// The engine's PRNG.
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
    /// Uniform in [0, n]; 0 if n = 0.
    pub fn below_inclusive(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.0.gen_range(0..=n)
        }
    }
}

#[allow(dead_code)]
fn _assert_seedable() {
    let _ = Pcg64Mcg::seed_from_u64(0);
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
}

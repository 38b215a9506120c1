//! Delay histograms: HdrHistogram with 3 significant digits, summarised in ms.
//!
//! Per sample only a bucket counter is incremented (HdrHistogram's own bucket
//! index for the value, computed inline); the counts are folded into an
//! `hdrhistogram::Histogram` when the summary is read, so every statistic comes
//! out of the library exactly as if each sample had been recorded there.

use crate::results::DelayStats;
use crate::time::NS_PER_MS;
use hdrhistogram::Histogram;

/// Highest delay tracked: 1 hour.
const HIGHEST_NS: u64 = 3_600_000_000_000;
/// 3 significant digits, lowest value 1: HdrHistogram's sub-bucket count is
/// 2^⌈log2(2·10³)⌉ = 2048 (half count 1024, magnitude 10), unit magnitude 0.
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = 10;
const SUB_BUCKET_MASK: u64 = (1 << (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1)) - 1;
/// `leading_zero_count_base` = 64 − unit magnitude − (half count magnitude + 1).
const LEADING_ZERO_COUNT_BASE: u32 = 64 - (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1);

/// HdrHistogram's `index_for` for these parameters.
#[inline(always)]
fn index_for(value: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub = (value >> bucket) as usize;
    (((bucket + 1) as usize) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub - (1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE)
}

/// The lowest value of bucket `index` (HdrHistogram's `value_for`).
fn value_for(index: usize) -> u64 {
    let half = 1usize << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
    let mut bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) as i64 - 1;
    let mut sub = (index & (half - 1)) + half;
    if bucket < 0 {
        sub -= half;
        bucket = 0;
    }
    (sub as u64) << bucket
}

/// Delay histogram in ns with 3 significant digits (relative error ≤ 0.1 %).
pub struct DelayHistogram {
    /// Samples beyond the counted range (clamped by the library); empty template otherwise.
    hist: Histogram<u64>,
    /// Samples per HdrHistogram bucket index.
    counts: Vec<u64>,
    sum_ns: u128,
}

impl DelayHistogram {
    pub fn new() -> Self {
        // Up to 1 hour of delay; memory is bounded (~100 KB).
        let hist = Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("valid histogram bounds");
        let counts = vec![0; hist.distinct_values()];
        debug_assert_eq!(index_for(HIGHEST_NS), counts.len() - 1);
        DelayHistogram { hist, counts, sum_ns: 0 }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = ns.max(1);
        match self.counts.get_mut(index_for(v)) {
            Some(c) if v <= HIGHEST_NS => *c += 1,
            _ => self.hist.saturating_record(v),
        }
        self.sum_ns += ns as u128;
    }

    /// The library histogram of every sample recorded.
    fn histogram(&self) -> Histogram<u64> {
        let mut h = self.hist.clone();
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                h.record_n(value_for(i), c).expect("bucket value in range");
            }
        }
        h
    }

    pub fn stats_ms(&self) -> DelayStats {
        let hist = self.histogram();
        let n = hist.len();
        if n == 0 {
            return DelayStats::default();
        }
        let q = |p: f64| hist.value_at_quantile(p) as f64 / NS_PER_MS as f64;
        DelayStats {
            count: n,
            mean: self.sum_ns as f64 / n as f64 / NS_PER_MS as f64,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: hist.max() as f64 / NS_PER_MS as f64,
        }
    }
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<u64> {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut v = vec![0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, HIGHEST_NS, HIGHEST_NS + 1, u64::MAX];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x >> (x % 40 + 20));
        }
        v
    }

    #[test]
    fn bucket_index_matches_the_library() {
        let h = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
        for v in samples().into_iter().filter(|&v| (1..=HIGHEST_NS).contains(&v)) {
            assert_eq!(value_for(index_for(v)), h.lowest_equivalent(v), "value {v}");
            assert!(index_for(v) < h.distinct_values());
        }
    }

    #[test]
    fn stats_equal_recording_every_sample_in_the_library() {
        let mut ours = DelayHistogram::new();
        let mut lib = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
        for v in samples() {
            ours.record(v);
            lib.saturating_record(v.max(1));
        }
        let h = ours.histogram();
        assert_eq!(h.len(), lib.len());
        assert_eq!(h.max(), lib.max());
        assert_eq!(h.min_nz(), lib.min_nz());
        for p in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(p), lib.value_at_quantile(p), "quantile {p}");
        }
        assert_eq!(h, lib);
    }
}

//! Delay histograms: HdrHistogram with 3 significant digits, summarised in ms.

use crate::results::DelayStats;
use crate::time::NS_PER_MS;
use hdrhistogram::Histogram;

/// Delay histogram in ns with 3 significant digits (relative error ≤ 0.1 %).
pub struct DelayHistogram {
    hist: Histogram<u64>,
    sum_ns: u128,
}

impl DelayHistogram {
    pub fn new() -> Self {
        // Up to 1 hour of delay; memory is bounded (~100 KB).
        let hist = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds");
        DelayHistogram { hist, sum_ns: 0 }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
        self.sum_ns += ns as u128;
    }

    pub fn stats_ms(&self) -> DelayStats {
        let n = self.hist.len();
        if n == 0 {
            return DelayStats::default();
        }
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / NS_PER_MS as f64;
        DelayStats {
            count: n,
            mean: self.sum_ns as f64 / n as f64 / NS_PER_MS as f64,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: self.hist.max() as f64 / NS_PER_MS as f64,
        }
    }
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

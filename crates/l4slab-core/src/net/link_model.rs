//! What a link does to packets beyond its queue and constant propagation: loss on
//! the wire, delay jitter, batched release (aggregation), and a rate that changes
//! over time. Each is off unless the link's config asks for it, and a link without
//! any carries no [`LinkModel`] at all (`Link::model` is `None`: one branch per
//! transmitted packet).
//!
//! - **Loss** (netem's loss generators, `net/sched/sch_netem.c:loss_event`):
//!   `random` loses each packet with probability p (`loss random P`);
//!   `gemodel` is the Gilbert-Elliott chain of `sch_netem.c:loss_gilb_ell` (`loss
//!   gemodel p r 1-h 1-k`): per packet, the state moves good → bad with p (bad →
//!   good with r), and the packet is lost with the loss probability of the state it
//!   met (1-k good, 1-h bad). Stationary loss: (r(1-k) + p(1-h)) / (p + r); a bad run
//!   lasts 1/r packets on average. Unlike netem, which drops at its enqueue, the loss
//!   is on the wire after the queue: the frame used the link's capacity (a radio
//!   link's loss), and it is counted as a drop at this link.
//! - **Jitter** (`delay D J`, `sch_netem.c:tabledist` without a distribution table):
//!   each packet's propagation is uniform in [D − J, D + J). With `reorder`, packets
//!   leave by their own times, as netem's tfifo sorts them (`tfifo_enqueue`); without,
//!   a packet never leaves before the one ahead of it, as `netem_enqueue` times a packet
//!   from the last one's `time_to_send` when `rate` is set.
//! - **Aggregation**: the wire sends only at grants every `interval` (from time 0), at
//!   most `max_bytes` a grant; a frame waits for the first grant at or after it left
//!   the queue with room for it (an 802.11 A-MPDU per TXOP, a DOCSIS upstream grant per
//!   MAP interval), so packets arrive in batches.
//! - **Rate schedule**: `tc class change ... htb rate R` at given times
//!   (`sch_htb.c:htb_change_class`): the class's rate and bucket change, the tokens it
//!   holds (kept in ns of transmission time) stay, capped by the new bucket. A ramp is
//!   a sequence of such steps; a capacity trace is one step per sample.
//!
//! Every draw comes from the link's own stream (`rng::Stream::LinkModel(link)`).

use crate::config::{AggregateConfig, BottleneckConfig, JitterConfig, LossConfig, RateStep};
use crate::rng::SimRng;
use crate::time::Time;

#[derive(Clone, Debug)]
enum Loss {
    Random { p: f64 },
    Gemodel { p: f64, r: f64, bad_loss: f64, good_loss: f64, bad: bool },
}

#[derive(Clone, Debug)]
struct Aggregate {
    interval_ns: u64,
    max_bytes: u64,
    /// The current grant and the bytes it carries so far.
    grant: Time,
    used: u64,
}

/// A link's loss, jitter and aggregation (the rate schedule lives with the shaper).
#[derive(Clone, Debug)]
pub struct LinkModel {
    rng: SimRng,
    loss: Option<Loss>,
    jitter: Option<JitterConfig>,
    aggregate: Option<Aggregate>,
    /// The last arrival time given out (jitter without reordering).
    last_arrive: Time,
    /// Packets lost on the wire.
    pub lost: u64,
}

impl LinkModel {
    /// The model of `cfg`'s loss, jitter and aggregation; `None` if it has none.
    pub fn new(cfg: &BottleneckConfig, rng: SimRng) -> Option<Self> {
        if cfg.loss.is_none() && cfg.jitter.is_none() && cfg.aggregate.is_none() {
            return None;
        }
        Some(LinkModel {
            rng,
            loss: cfg.loss.map(|l| match l {
                LossConfig::Random { p } => Loss::Random { p },
                LossConfig::Gemodel { p, r, bad_loss, good_loss } => {
                    Loss::Gemodel { p, r, bad_loss, good_loss, bad: false }
                }
            }),
            jitter: cfg.jitter,
            aggregate: cfg.aggregate.map(|AggregateConfig { interval_ns, max_bytes }| Aggregate {
                interval_ns,
                max_bytes,
                grant: 0,
                used: 0,
            }),
            last_arrive: 0,
            lost: 0,
        })
    }

    /// One uniform draw in (0, 1] against probability `p`.
    #[inline]
    fn coin(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.unit_open0() <= p
    }

    /// Whether the next packet is lost (`sch_netem.c:loss_event`).
    fn lose(&mut self) -> bool {
        match self.loss {
            None => false,
            Some(Loss::Random { p }) => self.coin(p),
            Some(Loss::Gemodel { p, r, bad_loss, good_loss, bad }) => {
                // The transition first, then the loss of the state the packet met
                // (`loss_gilb_ell`: GOOD_STATE draws a1 = p, then a4 = 1-k).
                let (leave, loss) = if bad { (r, bad_loss) } else { (p, good_loss) };
                let flip = self.coin(leave);
                if let Some(Loss::Gemodel { bad: b, .. }) = self.loss.as_mut() {
                    *b ^= flip;
                }
                self.coin(loss)
            }
        }
    }

    /// A frame of `wire_len` bytes left the queue (or the serialiser) at `depart` onto
    /// a wire of propagation `delay_ns`: its arrival at the next hop, or `None` if
    /// the wire loses it.
    #[inline(never)]
    pub fn apply(&mut self, depart: Time, delay_ns: u64, wire_len: u32) -> Option<Time> {
        let mut sent = depart;
        if let Some(a) = self.aggregate.as_mut() {
            let len = wire_len as u64;
            let mut g = depart.div_ceil(a.interval_ns) * a.interval_ns;
            if g <= a.grant {
                g = a.grant;
                if a.used + len > a.max_bytes {
                    g += a.interval_ns;
                }
            }
            if g != a.grant {
                a.grant = g;
                a.used = 0;
            }
            a.used += len;
            sent = g;
        }
        if self.lose() {
            self.lost += 1;
            return None;
        }
        let arrive = match self.jitter {
            None => sent + delay_ns,
            Some(j) => {
                // tabledist: (rnd % 2σ) − σ + μ.
                let span = 2 * j.jitter_ns;
                let d = if span == 0 { delay_ns } else { delay_ns - j.jitter_ns + self.rng.next_u64() % span };
                let t = sent + d;
                if j.reorder {
                    t
                } else {
                    t.max(self.last_arrive)
                }
            }
        };
        self.last_arrive = self.last_arrive.max(arrive);
        Some(arrive)
    }
}

/// A shaped link's rate over time: the steps still to come.
#[derive(Clone, Debug, Default)]
pub struct RateSchedule {
    initial_bps: u64,
    steps: Vec<RateStep>,
    next: usize,
}

impl RateSchedule {
    pub fn new(initial_bps: u64, steps: &[RateStep]) -> Self {
        RateSchedule { initial_bps, steps: steps.to_vec(), next: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// When the next step is due.
    pub fn next_at(&self) -> Option<Time> {
        self.steps.get(self.next).map(|s| s.at_ns)
    }

    /// The rate of the last step due by `now`, advancing past it (`None`: none due).
    pub fn take_due(&mut self, now: Time) -> Option<u64> {
        let mut rate = None;
        while let Some(s) = self.steps.get(self.next).filter(|s| s.at_ns <= now) {
            rate = Some(s.rate_bps);
            self.next += 1;
        }
        rate
    }

    /// Bits the link could carry in [0, t): the integral of its rate.
    pub fn capacity_bits(&self, t: Time) -> f64 {
        let (mut bits, mut from, mut rate) = (0.0, 0u64, self.initial_bps);
        for s in &self.steps {
            if s.at_ns >= t {
                break;
            }
            bits += rate as f64 * (s.at_ns - from) as f64 / 1e9;
            (from, rate) = (s.at_ns, s.rate_bps);
        }
        bits + rate as f64 * (t.saturating_sub(from)) as f64 / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QdiscConfig;
    use crate::rng::{stream, Stream};

    fn link(extra: serde_json::Value) -> BottleneckConfig {
        let mut v = serde_json::json!({"rate_bps": 10_000_000, "qdisc": {"kind": "pfifo"}, "delay_ns": 1_000_000});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let c: BottleneckConfig = serde_json::from_value(v).unwrap();
        assert!(matches!(c.qdisc, QdiscConfig::Pfifo(_)));
        c
    }

    fn model(extra: serde_json::Value) -> LinkModel {
        LinkModel::new(&link(extra), stream(9, Stream::LinkModel(0))).unwrap()
    }

    #[test]
    fn no_model_without_loss_jitter_or_aggregation() {
        assert!(LinkModel::new(&link(serde_json::json!({})), stream(1, Stream::LinkModel(0))).is_none());
    }

    #[test]
    fn random_loss_has_its_probability() {
        // n = 10^6 Bernoulli(0.01): sd of the rate 1e-4; 5 sd = 5e-4.
        let mut m = model(serde_json::json!({"loss": {"model": "random", "p": 0.01}}));
        let n = 1_000_000u64;
        let lost = (0..n).filter(|&i| m.apply(i * 1000, 1_000_000, 1514).is_none()).count();
        let rate = lost as f64 / n as f64;
        assert!((rate - 0.01).abs() < 5e-4, "{rate}");
        assert_eq!(m.lost, lost as u64);
    }

    #[test]
    fn gilbert_elliott_loss_rate_and_burst_length_follow_the_chain() {
        // p = 0.01, r = 0.25, 1-h = 1, 1-k = 0 (Gilbert): π_bad = p / (p + r) = 0.03846,
        // every packet met in the bad state is lost: loss = π_bad; a loss burst is a bad
        // run, geometric with mean 1 / r = 4 packets.
        let mut m = model(serde_json::json!({"loss": {"model": "gemodel", "p": 0.01, "r": 0.25,
            "bad_loss": 1.0, "good_loss": 0.0}}));
        let n = 2_000_000u64;
        let lost: Vec<bool> = (0..n).map(|i| m.apply(i * 1000, 1_000_000, 1514).is_none()).collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / n as f64;
        let want = 0.01 / 0.26;
        // Bursts of mean 4: the count's variance is ~ n π (mean burst)(1+...) ≈ 8 n π:
        // sd of the rate ≈ sqrt(8 · 0.038 / 2e6) ≈ 4e-4; allow 2e-3.
        assert!((rate - want).abs() < 2e-3, "loss {rate} vs {want}");
        let (mut bursts, mut in_burst, mut burst_pkts) = (0u64, false, 0u64);
        for &l in &lost {
            if l {
                burst_pkts += 1;
                if !in_burst {
                    bursts += 1;
                }
            }
            in_burst = l;
        }
        let mean_burst = burst_pkts as f64 / bursts as f64;
        assert!((mean_burst - 4.0).abs() < 0.15, "mean burst {mean_burst} vs 1/r = 4");
        // The same seed loses the same packets.
        let mut again = model(serde_json::json!({"loss": {"model": "gemodel", "p": 0.01, "r": 0.25,
            "bad_loss": 1.0, "good_loss": 0.0}}));
        assert!((0..10_000u64).all(|i| again.apply(i * 1000, 1_000_000, 1514).is_none() == lost[i as usize]));
    }

    #[test]
    fn jitter_is_uniform_around_the_delay_and_reorders_only_when_asked() {
        // delay 1 ms, jitter 0.5 ms: U[0.5, 1.5) ms, mean 1 ms, variance J²/3.
        // Packets 100 µs apart: two packets reorder when d1 − d2 > 100 µs; for d1, d2
        // i.i.d. U(width w = 1 ms), P(d1 − d2 > Δ) = (w − Δ)² / (2 w²) = 0.405.
        let gap = 100_000u64;
        let mut m = model(serde_json::json!({"jitter": {"jitter_ns": 500_000, "reorder": true}}));
        let n = 400_000u64;
        let arr: Vec<u64> = (0..n).map(|i| m.apply(i * gap, 1_000_000, 1514).unwrap()).collect();
        let delays: Vec<f64> = arr.iter().enumerate().map(|(i, &a)| (a - i as u64 * gap) as f64).collect();
        let mean = delays.iter().sum::<f64>() / n as f64;
        let var = delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 1e6).abs() < 2e3, "mean {mean}");
        assert!((var.sqrt() - 5e5 / 3f64.sqrt()).abs() < 2e3, "sd {}", var.sqrt());
        assert!(delays.iter().all(|&d| (5e5..1.5e6).contains(&d)));
        let swapped = arr.windows(2).filter(|w| w[1] < w[0]).count() as f64 / (n - 1) as f64;
        assert!((swapped - 0.405).abs() < 0.005, "adjacent reorderings {swapped} vs 0.405");
        let mut fifo = model(serde_json::json!({"jitter": {"jitter_ns": 500_000}}));
        let arr: Vec<u64> = (0..n).map(|i| fifo.apply(i * gap, 1_000_000, 1514).unwrap()).collect();
        assert!(arr.windows(2).all(|w| w[1] >= w[0]), "no reordering without reorder");
    }

    #[test]
    fn aggregation_releases_at_grants_with_at_most_max_bytes_each() {
        // Grants every 4 ms of at most 10 frames of 1514 B. A frame every 1 ms: its
        // wait to the next grant is uniform over the grant period, mean 1.5 ms
        // (departures at 4k+1, 4k+2, 4k+3 wait 3, 2, 1 ms; 4k waits 0).
        let mut m = model(serde_json::json!({"aggregate": {"interval_ns": 4_000_000, "max_bytes": 15_140}}));
        let waits: Vec<u64> = (1..=4000u64).map(|i| m.apply(i * 1_000_000, 0, 1514).unwrap() - i * 1_000_000).collect();
        assert!(waits.iter().all(|w| *w < 4_000_000));
        let mean = waits.iter().sum::<u64>() as f64 / waits.len() as f64;
        assert!((mean - 1.5e6).abs() < 1.0, "{mean}");
        // 25 frames at once: 10 go at the first grant, 10 at the next, 5 at the third.
        let mut m = model(serde_json::json!({"aggregate": {"interval_ns": 4_000_000, "max_bytes": 15_140}}));
        let t: Vec<u64> = (0..25).map(|_| m.apply(1, 0, 1514).unwrap()).collect();
        assert_eq!(t.iter().filter(|&&x| x == 4_000_000).count(), 10);
        assert_eq!(t.iter().filter(|&&x| x == 8_000_000).count(), 10);
        assert_eq!(t.iter().filter(|&&x| x == 12_000_000).count(), 5);
    }

    #[test]
    fn rate_schedule_steps_and_capacity_integral() {
        let steps = [
            RateStep { at_ns: 1_000_000_000, rate_bps: 20_000_000 },
            RateStep { at_ns: 2_000_000_000, rate_bps: 100_000_000 },
        ];
        let mut s = RateSchedule::new(100_000_000, &steps);
        assert_eq!(s.next_at(), Some(1_000_000_000));
        assert_eq!(s.take_due(999_999_999), None);
        assert_eq!(s.take_due(1_000_000_000), Some(20_000_000));
        assert_eq!(s.next_at(), Some(2_000_000_000));
        // 1 s at 100 + 1 s at 20 + 1 s at 100 Mbit/s.
        assert!((s.capacity_bits(3_000_000_000) - 220e6).abs() < 1.0);
        assert!((s.capacity_bits(1_500_000_000) - 110e6).abs() < 1.0);
    }
}

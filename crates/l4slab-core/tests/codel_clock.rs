//! CoDel's clock is the router's: `codel_get_time()` = `ktime_get_ns() >> 10` as u32
//! (include/net/codel.h), so the re-entry rule of a queue's first dropping episode
//! (include/net/codel_impl.h:codel_dequeue, `now - drop_next < 16 * interval` with
//! `drop_next` still 0 from `codel_vars_init`) depends on the router's uptime. In
//! fq_codel a bucket whose `count` was raised by fat-flow drops in slow start
//! (sch_fq_codel.c:fq_codel_drop) then either starts afresh (count 1, rec_inv_sqrt 1.0)
//! or resumes from the stale rec_inv_sqrt of 0, which the Newton step keeps at 0: the
//! control law then marks every packet while the sojourn is above target, in this and
//! every later episode. PAM 2025's FQ-CoDel cell (`l4slab fidelity` case pam-fq-codel-delay)
//! under both uptimes.

use crate::common;
use common::*;
use serde_json::json;

/// PAM 2025's FQ-CoDel at 2 BDP: Prague (the study's vintage) vs non-ECN CUBIC, 100 Mbit/s, 10 ms.
fn pam_fq_codel(uptime_s: u64) -> l4slab_core::RunResults {
    let qdisc = json!({"kind": "fq_codel", "limit_packets": 167, "target_ns": 5 * MS, "interval_ns": 100 * MS,
                       "ecn": true, "uptime_ns": uptime_s * SEC});
    let prague = pam_prague();
    let cubic = json!({"kind": "tcp", "cc": "cubic", "rtt_ns": 10 * MS, "tso": false, "ecn": 0});
    run(&scenario(100, qdisc, vec![prague, cubic], 20))
}

#[test]
fn fq_codel_first_episode_follows_the_router_uptime() {
    // 1000 s = 976 562 500 codel units: (s32)(16 x 97 656 - now) < 0, a fresh start.
    // 3000 s = 2 929 687 500 units > 2^31: the signed test says "recent", r stays 0.
    let fresh = pam_fq_codel(1000);
    let stuck = pam_fq_codel(3000);
    let ce = |r: &l4slab_core::RunResults| r.flows[0].marks as f64 / r.flows[0].packets_sent as f64;
    let (d_fresh, d_stuck) = (fresh.flows[0].queuing_delay_ms, stuck.flows[0].queuing_delay_ms);
    // Stuck: a step marker at TARGET. A DCTCP-like flow holds the queue at the step
    // (DCTCP, SIGCOMM 2010 §3.3): Prague's sRTT - base within ~1 ms of the 5 ms target,
    // and CoDel marks a sizeable share of its packets.
    assert!((5.0..=6.0).contains(&d_stuck), "stuck: Prague queuing delay {d_stuck} ms");
    assert!(ce(&stuck) > 0.05, "stuck: CE fraction {}", ce(&stuck));
    // Fresh: the control law spaces marks by interval/sqrt(count), so Prague's small
    // alpha-scaled cuts let its queue stand well above TARGET with few marks (PAM 2025
    // FQ-CoDel 1-8 BDP: 6.9-9.3 ms).
    assert!((6.5..=10.0).contains(&d_fresh), "fresh: Prague queuing delay {d_fresh} ms");
    assert!(ce(&fresh) < 0.5 * ce(&stuck), "fresh CE {} vs stuck {}", ce(&fresh), ce(&stuck));
    // Flow isolation: either way each flow gets half the link, i.e. 50 Mbit/s of
    // 1514-B frames = 47.8 Mbit/s of CUBIC's 1448-B and 47.4 of Prague's 1436-B payloads.
    for r in [&fresh, &stuck] {
        assert!((r.flows[1].goodput_mbps - 47.8).abs() < 1.5, "CUBIC {}", r.flows[1].goodput_mbps);
        assert!((r.flows[0].goodput_mbps - 47.4).abs() < 1.5, "Prague {}", r.flows[0].goodput_mbps);
    }
}

//! The model version: which engine behaviour produced a result.
//!
//! The package version (`CARGO_PKG_VERSION`) says nothing about results: it stayed the
//! same through every change of the engine's behaviour. The model version does: it is
//! bumped by every commit that changes the result corpus (`tests/corpus`: the canonical
//! results of 59 scenarios, `tests/corpus.rs`), and each version records the digest of
//! the corpus it produces. The corpus test fails when the corpus's digest is not the
//! current version's, so a change of results cannot be committed without a new version.
//!
//! Every study run id hashes the model (version and corpus digest, [`MODEL_ID`]), and
//! every result carries it: a study directory never mixes results of two models (a
//! resumed study re-runs what another model computed; `study run-one` refuses a plan
//! made by another model).

/// Each model version and the sha256 of its result corpus: the `HASH  NAME` lines of
/// `tests/corpus/sha256.txt`, sorted by name, each ending in `\n`. Append-only: a
/// commit that re-blesses the corpus appends `(last + 1, new digest)`; the corpus test
/// prints the digest to append (`tests/corpus.rs`: sha256 over `HASH  NAME\n` per
/// scenario, sorted by name). Versions 1-17 are the corpus's earlier states in git
/// (`git log -- crates/l4slab-core/tests/corpus/sha256.txt`), not listed here.
pub const MODELS: &[(u32, &str)] = &[
    (18, "96392ba7e1b2fb4d0daec6c4efdf40ef7b2720831301c6c7af8d55aa06ed9ff8"),
    // TSO deferral's 2025 head-ACK rule (`tso_defer_ack`): no corpus scenario defers, so
    // the corpus is the same; the version moves so that no study reuses older runs.
    (19, "96392ba7e1b2fb4d0daec6c4efdf40ef7b2720831301c6c7af8d55aa06ed9ff8"),
    // 20: the receiver's buffer autotuning and advertised window (tcp/rcvbuf.rs:
    // tcp_rcv_space_adjust, tcp_grow_window's quick ACKs, __tcp_select_window).
    (20, "dc996e18547f3670a4a4e27705888f9cd098bf86ce13ff381bb2bb84dba71710"),
    // 21: one tx.in_flight per skb (tcp_rate.c:tcp_set_tx_in_flight): every segment of a
    // GSO skb carries the flight with the whole skb counted, as BBRv2/v3 read it.
    (21, "70472a1f3fa10a497cc7c18ac3a6d40cb57846884dc8c07807f0a740c69c8680"),
    // 22: TSO deferral sends the rest of a write-queue skb that fits the room
    // (tcp_output.c:tcp_tso_should_defer, the application's skbs of tcp_xmit_size_goal):
    // no corpus scenario defers, so the corpus is the same; deferring flows' results move.
    (22, "70472a1f3fa10a497cc7c18ac3a6d40cb57846884dc8c07807f0a740c69c8680"),
    // 23: PSH on the last segment of every multi-segment skb (tcp_output.c:
    // __tcp_transmit_skb, kept on the last segment by tcp_offload.c:tcp_gso_segment); a
    // receiver of Linux 6.6 on ACKs a full-sized PSH segment at once
    // (tcp_input.c:tcp_measure_rcv_mss sets ICSK_ACK_PUSHED, tcp.c:tcp_cleanup_rbuf), and
    // GRO flushes at a PSH segment (tcp_offload.c:tcp_gro_receive). With it, the AccECN
    // sender's option check as Linux's (tcp_input.c:tcp_accecn_process_option: the byte
    // counters are usable when the ACK moved only the counter it moved before, none
    // backwards), which no corpus scenario reaches.
    (23, "2079623edc369298ac427cc556c50207624531b2a4c43ccc6159709983377c6b"),
    // 24: skbs sized in mss_now (tcp_output.c:tcp_tso_segs, tcp_current_mss: the MSS less
    // the AccECN option every data segment carries), for a CC's tso_segs op (BBRv2/v3's
    // bbr_tso_segs) and tcp_tso_autosize alike; BBR's goal stays in mss_cache. No corpus
    // scenario sends GSO skbs with the option, so the corpus is the same; AccECN flows
    // with GSO move (L4S-BBRv2 at 100 Mbit/s: 8-segment skbs, not 7).
    (24, "2079623edc369298ac427cc556c50207624531b2a4c43ccc6159709983377c6b"),
];

/// The current model version (the last of [`MODELS`]).
pub const MODEL_VERSION: u32 = MODELS[MODELS.len() - 1].0;

/// The current model's corpus digest (the last of [`MODELS`]).
pub const MODEL_CORPUS_DIGEST: &str = MODELS[MODELS.len() - 1].1;

/// What a run id hashes for the model: `"<version>:<corpus digest>"`. The digest is in
/// it too, so that even a re-blessed corpus recorded under an unchanged version number
/// cannot reuse the old ids.
pub fn model_id() -> String {
    format!("{MODEL_VERSION}:{MODEL_CORPUS_DIGEST}")
}

/// `Ok` when [`MODELS`] is well formed: versions strictly increasing.
pub fn check_history() -> Result<(), String> {
    for pair in MODELS.windows(2) {
        if pair[1].0 <= pair[0].0 {
            return Err(format!("MODELS: version {} follows {}; versions must increase", pair[1].0, pair[0].0));
        }
    }
    for (v, d) in MODELS {
        if d.len() != 64 || !d.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
            return Err(format!("MODELS: version {v}'s digest {d:?} is not a sha256 hex digest"));
        }
    }
    Ok(())
}

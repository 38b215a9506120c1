//! Division by the MSS on the send path (`tcp_tso_autosize`, `tcp_xmit_size_goal`),
//! cached per MSS in the sender (`TcpSender::mss_div`) and used by `output`.

use super::GSO_MAX_SIZE;

/// Division by one MSS (`max(mss, 1)`), exact for every 32-bit dividend: Lemire,
/// Kaser & Kurz, "Faster remainder by direct computation" (Software: Practice and
/// Experience 49(6), 2019), `fastdiv`: with c = ⌊(2^64 − 1)/d⌋ + 1, ⌊n/d⌋ =
/// ⌊c·n / 2^64⌋ for all n, d < 2^32, d ≥ 2. One multiplication instead of a
/// hardware division on the send path; `size_goal` is `tcp_xmit_size_goal`'s
/// `gso_max_size / mss`.
#[derive(Clone, Copy, Debug)]
pub(super) struct MssDiv {
    /// The `tp.mss` these values are for (0: none yet).
    pub(super) mss: u32,
    /// c above; 0 for d = 1 (n/1 = n).
    c: u64,
    pub(super) size_goal: u32,
}

impl MssDiv {
    /// Not yet computed: no MSS is 0, so the first `mss_div` computes. Equal to
    /// `new(0)` (division by 1, `gso_max_size` segments), so it is right even for mss 0.
    pub(super) const EMPTY: MssDiv = MssDiv { mss: 0, c: 0, size_goal: GSO_MAX_SIZE as u32 };

    pub(super) fn new(mss: u32) -> Self {
        let d = mss.max(1);
        let c = if d == 1 { 0 } else { u64::MAX / d as u64 + 1 };
        MssDiv { mss, c, size_goal: (GSO_MAX_SIZE / d as u64).max(1) as u32 }
    }

    /// ⌊n / max(mss, 1)⌋.
    #[inline]
    pub(super) fn div(self, n: u32) -> u32 {
        if self.c == 0 {
            return n;
        }
        ((self.c as u128 * n as u128) >> 64) as u32
    }
}

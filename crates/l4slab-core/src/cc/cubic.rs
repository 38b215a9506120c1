//! Placeholder, replaced by the Cubic implementation.
use super::*;
#[derive(Default)]
pub struct Cubic;
impl CongestionControl for Cubic {
    fn name(&self) -> &'static str { "cubic" }
    fn ssthresh(&mut self, tp: &CcSock) -> u32 { (tp.cwnd >> 1).max(2) }
    fn cong_avoid(&mut self, tp: &mut CcSock, mut acked: u32) {
        if !tp.is_cwnd_limited() { return; }
        if tp.in_slow_start() { acked = tp.slow_start(acked); if acked == 0 { return; } }
        let w = tp.cwnd; tp.cong_avoid_ai(w, acked);
    }
}

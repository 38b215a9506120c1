//! Placeholder, replaced by the Reno implementation.
use super::*;
#[derive(Default)]
pub struct Reno;
impl CongestionControl for Reno {
    fn name(&self) -> &'static str { "reno" }
    fn ssthresh(&mut self, tp: &CcSock) -> u32 { (tp.cwnd >> 1).max(2) }
    fn cong_avoid(&mut self, tp: &mut CcSock, mut acked: u32) {
        if !tp.is_cwnd_limited() { return; }
        if tp.in_slow_start() { acked = tp.slow_start(acked); if acked == 0 { return; } }
        let w = tp.cwnd; tp.cong_avoid_ai(w, acked);
    }
}

//! ECN negotiation and feedback (Linux include/net/tcp_ecn.h and net/ipv4/tcp_input.c): the `tcp_ecn` sysctl matrix, the
//! SYN/SYN-ACK encodings, RFC 3168 / DCTCP-style / AccECN receiver state, and the
//! AccECN sender's decoding of the ACE field and option (Linux net/ipv4/tcp_input.c:__tcp_accecn_process).

use crate::cc::CcFlags;
pub use crate::cc::EcnMode;
pub use crate::packet::AccEcnOption;
use crate::packet::Ecn;

/// ACE values of the handshake (AE·4 + CWR·2 + ECE).
pub const SYN_ACE_CLASSIC: u8 = 0b011;
pub const SYN_ACE_ACCECN: u8 = 0b111;
pub const SYNACK_ACE_CLASSIC: u8 = 0b001;

/// `TCP_ACCECN_CEP_INIT_OFFSET`: r.cep and s.cep start at 5.
pub const ACCECN_CEP_INIT: u32 = 5;
/// Byte counters start at E1B = E0B = 1, CEB = 0 (RFC 9768 §3.2.1).
pub const ACCECN_E1B_INIT: u32 = 1;
pub const ACCECN_E0B_INIT: u32 = 1;
pub const ACCECN_CEB_INIT: u32 = 0;
/// AccECN option byte counters are 24 bits wide.
pub const ACCECN_FIELD_MASK: u32 = (1 << 24) - 1;
/// Unreported CE marks that force an immediate ACK (Linux; Linux net/ipv4/tcp_input.c:__tcp_accecn_process).
pub const ACCECN_CE_PENDING_ACK_NOW: u32 = 6;

/// What the client asks for in its SYN, from its `tcp_ecn` sysctl and CC flags.
pub fn client_syn_ace(tcp_ecn: u8, cc: CcFlags) -> u8 {
    if cc.needs_accecn {
        return SYN_ACE_ACCECN;
    }
    if cc.needs_ecn {
        return SYN_ACE_CLASSIC;
    }
    match tcp_ecn {
        1 | 4 => SYN_ACE_CLASSIC,
        3 => SYN_ACE_ACCECN,
        _ => 0,
    }
}

/// IP-ECN codepoint of the SYN (Linux include/net/tcp_ecn.h:tcp_ecn_send_syn): Not-ECT unless the CC needs ECN.
pub fn syn_codepoint(cc: CcFlags) -> Ecn {
    if cc.wants_ect1 {
        Ecn::Ect1
    } else if cc.needs_ecn {
        Ecn::Ect0
    } else {
        Ecn::NotEct
    }
}

/// The server's decision on a SYN: (mode, SYN/ACK ACE) (Linux net/ipv4/tcp_input.c:tcp_ecn_create_request).
pub fn server_accept(syn_ace: u8, syn_ip_ecn: Ecn, tcp_ecn: u8, cc: CcFlags) -> (EcnMode, u8) {
    let accecn_ok = tcp_ecn >= 3 || cc.needs_accecn;
    if syn_ace != 0 && syn_ace != SYN_ACE_CLASSIC && accecn_ok {
        // RFC 9768 Table 2: the SYN/ACK reflects the SYN's IP-ECN field.
        let ace = match syn_ip_ecn {
            Ecn::NotEct => 0b010,
            Ecn::Ect1 => 0b011,
            Ecn::Ect0 => 0b100,
            Ecn::Ce => 0b110,
        };
        return (EcnMode::AccEcn, ace);
    }
    // An AccECN SYN (0b111) has CWR+ECE set, so a classic server accepts classic ECN.
    let ece_cwr = syn_ace & SYN_ACE_CLASSIC == SYN_ACE_CLASSIC;
    if ece_cwr && (tcp_ecn != 0 || cc.needs_ecn) && !cc.no_fallback_rfc3168 {
        return (EcnMode::Rfc3168, SYNACK_ACE_CLASSIC);
    }
    (EcnMode::Off, 0)
}

/// The client's mode after the SYN/ACK (`tcp_ecn_rcv_synack`).
pub fn client_on_synack(synack_ace: u8, requested: u8, cc: CcFlags) -> EcnMode {
    match synack_ace {
        0b000 | 0b111 => EcnMode::Off,
        0b001 => {
            if requested == 0 || cc.no_fallback_rfc3168 {
                EcnMode::Off
            } else {
                EcnMode::Rfc3168
            }
        }
        0b101 => {
            if requested == SYN_ACE_ACCECN {
                EcnMode::AccEcn
            } else {
                EcnMode::Off
            }
        }
        _ => {
            if requested == SYN_ACE_ACCECN {
                EcnMode::AccEcn
            } else {
                EcnMode::Off
            }
        }
    }
}

/// Size in bytes (4-aligned) of an AccECN option with `fields` counters.
#[inline]
pub fn accecn_option_len(fields: u8) -> u32 {
    (2 + 3 * fields as u32).div_ceil(4) * 4
}

/// Counters fitting in `space` option bytes (3 at most).
#[inline]
pub fn accecn_fields_fitting(space: u32) -> Option<u8> {
    (0..=3u8).rev().find(|&k| accecn_option_len(k) <= space)
}

/// AccECN receive-side counters (`tcp_ecn_received_counters`).
#[derive(Clone, Copy, Debug)]
pub struct AccEcnCounters {
    /// CE packet counter (r.cep), starting at 5.
    pub cep: u32,
    /// Payload bytes received per codepoint (24-bit wrapping in the option).
    pub e0b: u32,
    pub e1b: u32,
    pub ceb: u32,
    /// CE marks not yet reported by an ACK.
    pub pending_ce: u32,
    /// IP-ECN field of the previous packet.
    pub last_ecn: Option<Ecn>,
    /// `accecn_minlen`: option fields an ACK must carry (0 after an option was sent).
    pub minlen: u8,
}

impl Default for AccEcnCounters {
    fn default() -> Self {
        AccEcnCounters {
            cep: ACCECN_CEP_INIT,
            e0b: ACCECN_E0B_INIT,
            e1b: ACCECN_E1B_INIT,
            ceb: ACCECN_CEB_INIT,
            pending_ce: 0,
            last_ecn: None,
            minlen: 0,
        }
    }
}

impl AccEcnCounters {
    /// Count one received packet; returns whether its codepoint differs from the
    /// previous packet's (an "edge", which demands an immediate ACK).
    pub fn on_packet(&mut self, ecn: Ecn, payload: u32) -> bool {
        if ecn == Ecn::Ce {
            self.cep = self.cep.wrapping_add(1);
            self.pending_ce = (self.pending_ce + 1).min(15);
        }
        if payload > 0 {
            // `tcp_ecn_received_counters`: `accecn_minlen` = the option fields needed to
            // report the codepoints received since the last option (order e1b, ceb, e0b).
            let (c, fields) = match ecn {
                Ecn::Ect0 => (&mut self.e0b, 3),
                Ecn::Ect1 => (&mut self.e1b, 1),
                Ecn::Ce => (&mut self.ceb, 2),
                Ecn::NotEct => return self.edge(ecn),
            };
            *c = c.wrapping_add(payload);
            self.minlen = self.minlen.max(fields);
        }
        self.edge(ecn)
    }

    fn edge(&mut self, ecn: Ecn) -> bool {
        let changed = self.last_ecn.is_some_and(|l| l != ecn);
        self.last_ecn = Some(ecn);
        changed
    }

    /// ACE field to put on an ACK.
    #[inline]
    pub fn ace(&self) -> u8 {
        (self.cep & 7) as u8
    }
}

/// AccECN sender state: what has been decoded from ACKs so far (`s.cep`, byte counters).
#[derive(Clone, Copy, Debug)]
pub struct AccEcnSender {
    pub cep: u32,
    pub e0b: u32,
    pub e1b: u32,
    pub ceb: u32,
    /// EWMA of packets delivered per ACK, ×64 (weight 1/64).
    pub pkts_per_ack_x64: u32,
    /// `tp->est_ecnfield`: the byte counter the ACKs move alone (an [`OptField`] + 1),
    /// 0 when none or ambiguous.
    est_field: u8,
    /// `tp->saw_accecn_opt`: an ACK with the option's counters was seen.
    saw_option: bool,
}

/// The option's byte counters in the order of its fields (`TCPOPT_ACCECN1`: ECT(1), CE,
/// ECT(0)).
#[derive(Clone, Copy, PartialEq, Eq)]
enum OptField {
    E1b = 0,
    Ceb = 1,
    E0b = 2,
}

impl Default for AccEcnSender {
    fn default() -> Self {
        AccEcnSender {
            cep: ACCECN_CEP_INIT,
            e0b: ACCECN_E0B_INIT,
            e1b: ACCECN_E1B_INIT,
            ceb: ACCECN_CEB_INIT,
            pkts_per_ack_x64: 2 * 64,
            est_field: 0,
            saw_option: false,
        }
    }
}

impl AccEcnSender {
    /// `__tcp_accecn_process`: newly CE-marked packets reported by an ACK that
    /// newly delivered `delivered_pkts` packets (`delivered_bytes` payload bytes);
    /// `sack_or_open`: the ACK carried SACK or the sender is in Open/CWR.
    pub fn process(
        &mut self,
        ace: u8,
        opt: Option<AccEcnOption>,
        delivered_pkts: u32,
        delivered_bytes: u64,
        mss: u32,
        sack_or_open: bool,
    ) -> u32 {
        // `tcp_accecn_process_option`: the option's byte deltas (24-bit, sign-extended,
        // `tcp_update_ecn_bytes`) can be used when the ACK moves only the counter it moved
        // before (`est_ecnfield`) and none backwards; an ACK without the option (SACK
        // blocks took its room) counts its delivered bytes in that counter. The CE bytes
        // this ACK reported, when usable.
        let mut ce_bytes: Option<u64> = None;
        if let Some(o) = opt.filter(|o| o.fields > 0) {
            self.saw_option = true;
            let mut res = self.est_field != 0;
            let (mut first_changed, mut ambiguous) = (false, false);
            let mut dce = 0i32;
            for (field, new) in [(OptField::E1b, o.e1b), (OptField::Ceb, o.ceb), (OptField::E0b, o.e0b)]
                .into_iter()
                .take(o.fields as usize)
            {
                let cnt = match field {
                    OptField::E1b => &mut self.e1b,
                    OptField::Ceb => &mut self.ceb,
                    OptField::E0b => &mut self.e0b,
                };
                let raw = new.wrapping_sub(*cnt) & ACCECN_FIELD_MASK;
                let delta = if raw & 0x80_0000 != 0 { (raw | 0xFF00_0000) as i32 } else { raw as i32 };
                *cnt = cnt.wrapping_add(delta as u32) & ACCECN_FIELD_MASK;
                if field == OptField::Ceb {
                    dce = delta;
                }
                if delta < 0 {
                    res = false;
                    ambiguous = true;
                }
                if delta != 0 && field as u8 + 1 != self.est_field {
                    if !first_changed {
                        self.est_field = field as u8 + 1;
                        first_changed = true;
                    } else {
                        res = false;
                        ambiguous = true;
                    }
                }
            }
            if ambiguous {
                self.est_field = 0;
            }
            if res {
                ce_bytes = Some(dce.max(0) as u64);
            }
        } else if self.saw_option && self.est_field != 0 {
            let cnt = match self.est_field - 1 {
                0 => &mut self.e1b,
                1 => &mut self.ceb,
                _ => &mut self.e0b,
            };
            *cnt = cnt.wrapping_add(delivered_bytes as u32) & ACCECN_FIELD_MASK;
            ce_bytes = Some(if self.est_field - 1 == OptField::Ceb as u8 { delivered_bytes } else { 0 });
        }
        // EWMA of packets per ACK, weight 1/64.
        let e = self.pkts_per_ack_x64 as i64;
        self.pkts_per_ack_x64 = (e + delivered_pkts as i64 - (e >> 6)).max(0) as u32;

        let d = (ace as u32).wrapping_sub(self.cep) & 7;
        let result = if delivered_pkts <= 7 {
            d
        } else {
            // ACE may have wrapped: the largest value ≡ d (mod 8) not above delivered.
            let safe = delivered_pkts - ((delivered_pkts - d) & 7);
            match ce_bytes {
                Some(0) => d,
                Some(ceb) if delivered_pkts >= 16 && sack_or_open => {
                    if delivered_bytes <= ceb {
                        safe
                    } else {
                        // Estimate the CE packets from the byte share, then add the
                        // whole wraps of 8 it implies on top of d.
                        let est = (ceb * delivered_pkts as u64).div_ceil(delivered_bytes.max(1)) as u32;
                        safe.min(d + (est & !7))
                    }
                }
                Some(ceb) => {
                    if ceb > d as u64 * mss as u64 {
                        safe
                    } else if ceb < safe as u64 * mss as u64 / 2 {
                        d
                    } else {
                        safe
                    }
                }
                None => {
                    if self.pkts_per_ack_x64 > 4 * 64 {
                        d
                    } else {
                        safe
                    }
                }
            }
        };
        self.cep = self.cep.wrapping_add(result);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(needs_ecn: bool, accecn: bool, ect1: bool, nofb: bool) -> CcFlags {
        CcFlags { needs_ecn, needs_accecn: accecn, wants_ect1: ect1, no_fallback_rfc3168: nofb, needs_pacing: ect1 }
    }

    /// Negotiate between a client and a server; returns (client mode, server mode).
    fn negotiate(c_sysctl: u8, c_cc: CcFlags, s_sysctl: u8, s_cc: CcFlags) -> (EcnMode, EcnMode) {
        let req = client_syn_ace(c_sysctl, c_cc);
        let (smode, synack) = server_accept(req, syn_codepoint(c_cc), s_sysctl, s_cc);
        let cmode = client_on_synack(synack, req, c_cc);
        let smode = if cmode == EcnMode::Off { EcnMode::Off } else { smode };
        (cmode, smode)
    }

    #[test]
    fn negotiation_matrix_matches_linux() {
        let plain = CcFlags::default();
        let prague = flags(true, true, true, true);
        let dctcp = flags(true, false, false, false);
        // tcp_ecn: 3 = AccECN client, 1 = classic client, 2 = accept classic only, 0 = none.
        assert_eq!(negotiate(3, plain, 3, plain), (EcnMode::AccEcn, EcnMode::AccEcn));
        assert_eq!(negotiate(3, plain, 2, plain), (EcnMode::Rfc3168, EcnMode::Rfc3168));
        assert_eq!(negotiate(3, plain, 0, plain), (EcnMode::Off, EcnMode::Off));
        assert_eq!(negotiate(1, plain, 3, plain), (EcnMode::Rfc3168, EcnMode::Rfc3168));
        assert_eq!(negotiate(1, plain, 2, plain), (EcnMode::Rfc3168, EcnMode::Rfc3168));
        assert_eq!(negotiate(2, plain, 2, plain), (EcnMode::Off, EcnMode::Off));
        // Prague needs AccECN: a classic server makes it refuse ECN altogether.
        assert_eq!(negotiate(2, prague, 3, plain), (EcnMode::AccEcn, EcnMode::AccEcn));
        assert_eq!(negotiate(2, prague, 2, plain), (EcnMode::Off, EcnMode::Off));
        assert_eq!(negotiate(2, prague, 0, plain), (EcnMode::Off, EcnMode::Off));
        // A Prague listener accepts AccECN whatever its sysctl.
        assert_eq!(negotiate(2, prague, 2, prague), (EcnMode::AccEcn, EcnMode::AccEcn));
        // DCTCP requests classic ECN regardless of the sysctl.
        assert_eq!(negotiate(0, dctcp, 2, plain), (EcnMode::Rfc3168, EcnMode::Rfc3168));
        assert_eq!(negotiate(0, dctcp, 0, plain), (EcnMode::Off, EcnMode::Off));
    }

    #[test]
    fn synack_reflects_the_syn_codepoint() {
        let plain = CcFlags::default();
        assert_eq!(server_accept(SYN_ACE_ACCECN, Ecn::NotEct, 3, plain).1, 0b010);
        assert_eq!(server_accept(SYN_ACE_ACCECN, Ecn::Ect1, 3, plain).1, 0b011);
        assert_eq!(server_accept(SYN_ACE_ACCECN, Ecn::Ect0, 3, plain).1, 0b100);
        assert_eq!(server_accept(SYN_ACE_ACCECN, Ecn::Ce, 3, plain).1, 0b110);
    }

    #[test]
    fn ace_counts_ce_packets_from_five() {
        let mut r = AccEcnCounters::default();
        assert_eq!(r.ace(), 5);
        for _ in 0..4 {
            r.on_packet(Ecn::Ce, 1436);
        }
        assert_eq!(r.ace(), 1); // 9 mod 8
        assert_eq!(r.ceb, 4 * 1436);
    }

    /// `tcp_accecn_process_option`: the option's byte counters resolve ACE's wrap when
    /// the ACK moved one counter only, and the one it moved last (`est_ecnfield`); an ACK
    /// that moves two (ECT(1) and CE) is ambiguous and ACE stands alone.
    #[test]
    fn ace_wrap_with_more_than_seven_marks_between_acks() {
        let mut s = AccEcnSender::default();
        let mut r = AccEcnCounters::default();
        let opt = |r: &AccEcnCounters| Some(AccEcnOption { fields: 3, e1b: r.e1b, ceb: r.ceb, e0b: r.e0b });
        // Two ECT(1) packets: e1b alone moves, the estimate becomes ECT(1), no CE.
        for _ in 0..2 {
            r.on_packet(Ecn::Ect1, 1000);
        }
        assert_eq!(s.process(r.ace(), opt(&r), 2, 2000, 1000, true), 0);
        // 10 CE packets under one stretch ACK: ACE alone shows 10 mod 8 = 2; ceb alone
        // moved, by 10 000 B, more than 2 packets' worth: the wrap is resolved, 10.
        for _ in 0..10 {
            r.on_packet(Ecn::Ce, 1000);
        }
        assert_eq!(s.process(r.ace(), opt(&r), 10, 10_000, 1000, true), 10);
        assert_eq!(s.cep, r.cep);
        // 10 CE among 20 under one ACK: e1b and ceb both moved, the counters are
        // ambiguous; with few packets per ACK so far, ACE's safe estimate: 18.
        for i in 0..20 {
            r.on_packet(if i % 2 == 0 { Ecn::Ce } else { Ecn::Ect1 }, 1000);
        }
        assert_eq!(s.process(r.ace(), opt(&r), 20, 20_000, 1000, true), 18);
    }

    /// An ACK that moves only ECT(1) bytes reports no CE however many packets it covers,
    /// whatever the delivered bytes the sender counted (a cumulative advance replaces the
    /// newly SACKed bytes): Linux checks the counters' directions, not their sum.
    #[test]
    fn an_ect1_only_stretch_ack_reports_no_ce() {
        let mut s = AccEcnSender::default();
        let mut r = AccEcnCounters::default();
        let opt = |r: &AccEcnCounters| Some(AccEcnOption { fields: 2, e1b: r.e1b, ceb: r.ceb, e0b: r.e0b });
        r.on_packet(Ecn::Ect1, 1436);
        assert_eq!(s.process(r.ace(), opt(&r), 1, 1436, 1448, true), 0);
        for _ in 0..8 {
            r.on_packet(Ecn::Ect1, 1436);
        }
        assert_eq!(s.process(r.ace(), opt(&r), 8, 3 * 1436, 1448, true), 0);
    }

    #[test]
    fn lost_acks_without_option_use_the_safe_estimate() {
        let mut s = AccEcnSender::default();
        let mut r = AccEcnCounters::default();
        // 9 CE packets among 9 delivered; the ACKs in between were lost: d = 1, the
        // largest value ≡ 1 (mod 8) not above 9 is 9.
        for _ in 0..9 {
            r.on_packet(Ecn::Ce, 1000);
        }
        assert_eq!(s.process(r.ace(), None, 9, 9000, 1000, true), 9);
        // A small ACK with no new marks reports 0.
        assert_eq!(s.process(r.ace(), None, 2, 2000, 1000, true), 0);
    }

    #[test]
    fn option_sizes() {
        assert_eq!(accecn_option_len(3), 12);
        assert_eq!(accecn_option_len(2), 8);
        assert_eq!(accecn_option_len(1), 8);
        assert_eq!(accecn_option_len(0), 4);
        assert_eq!(accecn_fields_fitting(28), Some(3));
        assert_eq!(accecn_fields_fitting(8), Some(2));
        assert_eq!(accecn_fields_fitting(0), None);
    }
}

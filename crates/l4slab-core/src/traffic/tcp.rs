//! The TCP flow as one unit: its two sockets built from its config ([`build`]) and
//! driven as endpoints through their public API (crate::tcp).
//!
//! Every source of TCP connections builds them here, the scenario's flows
//! (`traffic/scenario.rs`) and the web source's connections (`traffic/web.rs`), after
//! `TcpFlowConfig::validate` checked the config: a knob means the same, and is refused
//! with the same message, in both. The knobs are declared once, in
//! `config::tcp_flow_params`.

use super::{DropInjection, Endpoint, EndpointBuffers, Measured, Reusable};
use crate::config::{ReceiverKernel, SackCompression, TcpFlowConfig};
use crate::packet::{Outbox, Packet, PacketKind};
use crate::results::{FlowSummary, RequestRecord};
use crate::rng::SimRng;
use crate::tcp::receiver::ReceiverBuffers;
use crate::tcp::sender::SenderBuffers;
use crate::tcp::{TcpReceiver, TcpSender};
use crate::time::{secs, Time};
use crate::trace::{FlowCumulative, FlowSample};

/// A TCP flow's two sockets for `slot`, from its config: the sender (stopping new data at
/// `stop`, its congestion control drawing from `cc_rng`) and the receiver (its own
/// congestion control with `receiver_cc_params`, sysctls, kernel tree and GRO), each
/// reusing a finished connection's buffers if given. Errors as
/// `TcpFlowConfig::validate`'s (none after it passed).
pub fn build(
    t: &TcpFlowConfig,
    slot: u32,
    stop: Time,
    cc_rng: SimRng,
    spare: (Option<SenderBuffers>, Option<ReceiverBuffers>),
) -> Result<(TcpSender, TcpReceiver), String> {
    let cc = crate::cc::build(&t.cc, t.cc_params.as_ref()).map_err(|e| format!("cc_params: {e}"))?;
    let rcc = crate::cc::build(t.receiver_cc(), t.receiver_cc_params.as_ref())
        .map_err(|e| format!("receiver_cc_params: {e}"))?;
    let mut sender = TcpSender::with_buffers(slot, t, cc, stop, spare.0);
    sender.tp.rng = cc_rng;
    let mut receiver = TcpReceiver::with_cc(slot, t.delayed_ack, t.receiver_ecn, t.ecn_option, rcc, spare.1)
        .with_l4steam_accecn(t.receiver_kernel == ReceiverKernel::L4steam)
        .with_fixed_window(t.rwnd_bytes.is_some())
        .with_rcvbuf_kernel(t.receiver_rcvbuf)
        .with_comp_sack_timer(t.receiver_sack_compression == SackCompression::Kernel);
    if t.gro {
        receiver.set_gro(t.rx_usecs_ns);
    }
    Ok((sender, receiver))
}

/// The data sender of a bulk (or sized) transfer.
pub struct TcpSenderEndpoint(pub TcpSender);

/// The receiving socket, and the application reading it.
pub struct TcpReceiverEndpoint {
    pub rx: TcpReceiver,
    /// A sized response read until the server's close (a web client); `None`: a bulk
    /// receiver, whose flow's completion is the sender's.
    pub response: Option<Response>,
}

/// A response the client reads to its end: it detects the close when the last byte
/// (and the FIN riding on it) arrives in order.
pub struct Response {
    pub size: u64,
    /// When the client opened its socket (the request's start).
    pub start: Time,
    pub closed_at: Option<Time>,
}

impl TcpReceiverEndpoint {
    /// A bulk transfer's receiver.
    pub fn bulk(rx: TcpReceiver) -> Self {
        TcpReceiverEndpoint { rx, response: None }
    }

    /// The completion time the client measured (open to close).
    fn fct_s(&self) -> Option<f64> {
        self.response.as_ref().and_then(|r| r.closed_at.map(|t| secs(t - r.start)))
    }
}

impl Endpoint for TcpSenderEndpoint {
    fn start(&mut self, now: Time, out: &mut Outbox) {
        self.0.start(now, out);
    }
    #[inline]
    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        self.0.on_packet(pkt, now, out);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.0.on_timer(now, out);
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        self.0.next_timer()
    }
    fn is_finished(&self) -> bool {
        self.0.stats.completed_at.is_some()
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
    fn drop_injection(&self) -> Option<&dyn DropInjection> {
        self.0.injects_drops().then_some(self as &dyn DropInjection)
    }
    fn into_reusable(self: Box<Self>) -> Option<Box<dyn Reusable>> {
        Some(self)
    }
}

impl DropInjection for TcpSenderEndpoint {
    #[inline]
    fn loses_on_first_hop(&self, pkt: &Packet) -> bool {
        pkt.kind == PacketKind::Data && self.0.should_inject_drop(pkt)
    }
}

impl Measured for TcpSenderEndpoint {
    fn add_cumulative(&self, c: &mut FlowCumulative) {
        let st = &self.0.stats;
        c.retransmits += st.retransmits;
        c.rtt_sum_us += st.rtt_sum_us;
        c.rtt_samples += st.rtt_samples;
        c.segments_sent += st.data_segments_sent;
        c.payload_bytes_sent += st.payload_bytes_sent;
    }
    fn sample(&self, s: &mut FlowSample) {
        let srtt = self.0.srtt_us();
        s.srtt_ms = if srtt > 0 { srtt as f64 / 1000.0 } else { f64::NAN };
        s.cwnd = self.0.cwnd() as f64;
        s.alpha = self.0.cc_alpha().unwrap_or(f64::NAN);
        s.pacing_rate_mbps = self.0.tp.pacing_rate as f64 * 8.0 / 1e6;
        s.cc = self.0.cc_state();
    }
    fn summarise(&self, flow_start: Time, s: &mut FlowSummary) {
        let sender = &self.0;
        let st = &sender.stats;
        s.kind = "tcp".into();
        s.cc = sender.cc_name().into();
        s.mean_rtt_ms =
            if st.rtt_samples > 0 { st.rtt_sum_us as f64 / st.rtt_samples as f64 / 1000.0 } else { f64::NAN };
        s.retransmits = st.retransmits;
        s.rto_count = st.rto_count;
        s.tlp_count = st.tlp_count;
        s.recoveries = st.recoveries;
        s.packets_sent = st.data_segments_sent;
        s.fct_s = st.completed_at.map(|t| secs(t - flow_start));
        s.final_cwnd = sender.cwnd();
        s.ecn_mode = sender.ecn_mode().name().into();
        let n = st.data_segments_sent as f64;
        s.mean_payload_bytes = st.payload_bytes_sent as f64 / n;
        s.payload_sd_bytes = (st.payload_sq_sum as f64 / n - s.mean_payload_bytes.powi(2)).max(0.0).sqrt();
        s.mean_pacing_rate_mbps = st.pacing_rate_sum as f64 / n * 8.0 / 1e6;
        if st.data_segments_sent == 0 {
            (s.mean_payload_bytes, s.payload_sd_bytes, s.mean_pacing_rate_mbps) = (f64::NAN, f64::NAN, f64::NAN);
        }
    }
}

impl Reusable for TcpSenderEndpoint {
    fn take_buffers(&mut self) -> Option<EndpointBuffers> {
        Some(EndpointBuffers::Sender(self.0.take_buffers()))
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl Endpoint for TcpReceiverEndpoint {
    #[inline]
    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        self.rx.on_packet(pkt, now, out);
        if let Some(r) = &mut self.response {
            if r.closed_at.is_none() && self.rx.bytes_delivered >= r.size {
                r.closed_at = Some(now);
            }
        }
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.rx.on_timer(now, out);
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        self.rx.next_timer()
    }
    fn is_finished(&self) -> bool {
        // A receiver has no work of its own once the sender is done (its delayed
        // ACK, if any, only matters to a sender that is still waiting).
        true
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
    fn into_reusable(self: Box<Self>) -> Option<Box<dyn Reusable>> {
        Some(self)
    }
}

impl Measured for TcpReceiverEndpoint {
    fn add_cumulative(&self, c: &mut FlowCumulative) {
        c.bytes_delivered += self.rx.bytes_delivered;
        c.ce_packets += self.rx.ce_packets;
    }
    fn summarise(&self, _flow_start: Time, s: &mut FlowSummary) {
        let r = &self.rx;
        s.acks_sent = r.acks_sent;
        s.ce_packets = r.ce_packets;
        s.ce_bytes = r.ce_bytes;
        s.acks_per_packet =
            if r.segments_received > 0 { r.acks_sent as f64 / r.segments_received as f64 } else { f64::NAN };
        if self.response.is_some() {
            // The client's completion time, as the DualQ paper's client logged it.
            s.fct_s = self.fct_s();
        }
    }
    fn fill_request(&self, r: &mut RequestRecord) {
        r.bytes_received = self.rx.bytes_delivered;
        r.fct_s = self.fct_s();
        r.ce_packets = self.rx.ce_packets;
    }
}

impl Reusable for TcpReceiverEndpoint {
    fn take_buffers(&mut self) -> Option<EndpointBuffers> {
        Some(EndpointBuffers::Receiver(self.rx.take_buffers()))
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

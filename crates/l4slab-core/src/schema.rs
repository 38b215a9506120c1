//! The engine's self-description: every qdisc's and congestion control's parameters
//! (engine field, default, range, unit, one-line doc), the TCP flow knobs, the CC
//! descriptors and the metric names the results carry.
//!
//! This is the single source of truth the Python front end reads (through the
//! binding's `schema()`): it derives its registries, defaults, validation messages
//! and metric lists from here and keeps only `tc` spelling of its own.

use serde::Serialize;

/// What kind of value a parameter holds, which fixes its unit in the engine config.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// Nanoseconds (engine field ends in `_ns`; `tc` writes a time).
    TimeNs,
    /// Bytes (`_bytes`).
    Bytes,
    /// Packets (`_packets` or a bare `limit`).
    Packets,
    /// Bits per second (`_bps`).
    RateBps,
    /// An integer without unit.
    Int,
    /// A real number.
    Float,
    /// A flag.
    Bool,
    /// One of `choices`.
    Choice,
    /// A nested object (e.g. Prague's segment-sizing rule); `doc` says its shape.
    Object,
}

/// One parameter of a qdisc, a congestion control or a TCP flow.
#[derive(Clone, Debug, Serialize)]
pub struct ParamSpec {
    /// Field name in the engine config (e.g. `target_ns`).
    pub name: &'static str,
    pub kind: ParamKind,
    /// Linux's default, in the engine's unit; `null` when unset means "derived"
    /// (the doc says from what).
    pub default: serde_json::Value,
    /// Inclusive bounds in the engine's unit, if any.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Allowed values of a `Choice`.
    pub choices: Vec<&'static str>,
    /// One line: what it does, and the primary source of its default.
    pub doc: &'static str,
    /// Whether `tc` (or the sysctl/socket option a flow knob mirrors) has a keyword
    /// for it; `false` for device properties and l4slab's own model switches, which
    /// the front end may leave at their default.
    pub tc_keyword: bool,
}

impl ParamSpec {
    /// A parameter without bounds or choices.
    pub fn new(name: &'static str, kind: ParamKind, default: serde_json::Value, doc: &'static str) -> Self {
        ParamSpec { name, kind, default, min: None, max: None, choices: Vec::new(), doc, tc_keyword: true }
    }
    /// A parameter `tc` has no keyword for (a device property or a model switch).
    pub fn not_tc(mut self) -> Self {
        self.tc_keyword = false;
        self
    }
    /// Inclusive range.
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.min = Some(min);
        self.max = Some(max);
        self
    }
    /// Allowed values.
    pub fn choices(mut self, choices: &[&'static str]) -> Self {
        self.choices = choices.to_vec();
        self
    }
}

/// A qdisc the engine implements.
#[derive(Clone, Debug, Serialize)]
pub struct QdiscSpec {
    /// `tc` kind (`dualpi2`).
    pub kind: &'static str,
    pub doc: &'static str,
    pub params: Vec<ParamSpec>,
    /// Sub-queues reported in per-class statistics (DualPI2: `C`, `L`).
    pub classes: Vec<&'static str>,
}

/// A congestion control the engine implements.
#[derive(Clone, Debug, Serialize)]
pub struct CcSpec {
    /// Linux name (`tcp_congestion_ops.name`, as `sysctl net.ipv4.tcp_congestion_control`).
    pub name: &'static str,
    pub doc: &'static str,
    /// A scalable (L4S) congestion control: sends ECT(1) and reacts to CE in proportion.
    pub l4s: bool,
    /// `TCP_CONG_*` flags (`needs_ecn`, `needs_accecn`, `wants_ect1`, `no_fallback_rfc3168`, `needs_pacing`).
    pub flags: Vec<&'static str>,
    /// Defaults for the receiving host that a testbed running this CC used
    /// (`receiver_ecn`, `receiver_cc`), applied only where a flow leaves them unset.
    pub receiver_defaults: serde_json::Value,
    /// Module parameters (`cc_params`).
    pub params: Vec<ParamSpec>,
}

/// Everything the front end reads.
#[derive(Clone, Debug, Serialize)]
pub struct EngineSchema {
    /// The package version.
    pub version: &'static str,
    /// The model version and its result corpus's digest (`model.rs`): what a run id hashes.
    pub model_version: u32,
    pub model_corpus_digest: &'static str,
    /// What a run id hashes for the model (`model::model_id`).
    pub model_id: String,
    pub qdiscs: Vec<QdiscSpec>,
    pub congestion_controls: Vec<CcSpec>,
    /// Knobs of a TCP flow (`TcpFlowConfig`).
    pub tcp_flow: Vec<ParamSpec>,
    /// Metric names per result table: `flow_summary`, `flow_series`, `bottleneck_summary`,
    /// `bottleneck_series`.
    pub metrics: serde_json::Value,
    /// The scenario's bounds (`config::limits`): `max_flows`, `max_timer_latency_ns`, ...
    pub limits: serde_json::Value,
    /// The names of the ECN modes a connection negotiates (`cc::EcnMode`), in the
    /// kernel's `tcpi_ecn_mode` order.
    pub ecn_modes: Vec<&'static str>,
    /// What a run holds in memory (`memory::sizes`): series per flow and bottleneck,
    /// bytes of a sojourn-trace and capture record, a flow's state, each CC's state.
    pub memory: serde_json::Value,
    /// Each receiving Linux version's host defaults the engine models, by the name a flow's
    /// `receiver_rcvbuf` takes (`tcp::rcvbuf::receiver_rcvbufs`: `tcp_rmem`), so the kernel
    /// backend configures its guest from the same numbers.
    pub receiver_rcvbufs: serde_json::Value,
}

/// Check `value`'s serde fields against `params` (a qdisc's, a CC's `cc_params` or a
/// TCP flow's knobs): numbers (and each number of an
/// array) within `min..=max`, strings among `choices`; `null` (an unset optional) passes.
pub fn check_params<T: Serialize>(params: &[ParamSpec], value: &T) -> Result<(), String> {
    let v = serde_json::to_value(value).map_err(|e| e.to_string())?;
    for p in params {
        let Some(x) = v.get(p.name) else { continue };
        let nums: Vec<&serde_json::Value> = match x {
            serde_json::Value::Array(a) => a.iter().collect(),
            _ => vec![x],
        };
        for n in nums {
            if let Some(f) = n.as_f64() {
                let lo = p.min.unwrap_or(f64::NEG_INFINITY);
                let hi = p.max.unwrap_or(f64::INFINITY);
                if !(lo..=hi).contains(&f) {
                    return Err(format!("{}: {x} is out of range (allowed {})", p.name, range_text(p)));
                }
            }
            if let (Some(s), false) = (n.as_str(), p.choices.is_empty()) {
                if !p.choices.contains(&s) {
                    return Err(format!("{}: {x} is not allowed (allowed {})", p.name, p.choices.join(", ")));
                }
            }
        }
    }
    Ok(())
}

/// `min..=max` as a validation message shows it.
pub(crate) fn range_text(p: &ParamSpec) -> String {
    let f = |b: Option<f64>| b.map_or(String::new(), |x| x.to_string());
    format!("{}..={}", f(p.min), f(p.max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn choices_are_checked() {
        let p = [ParamSpec::new("mode", ParamKind::Choice, Value::Null, "x").choices(&["a", "b"])];
        assert_eq!(check_params(&p, &serde_json::json!({"mode": "b"})), Ok(()));
        assert_eq!(
            check_params(&p, &serde_json::json!({"mode": "c"})).unwrap_err(),
            "mode: \"c\" is not allowed (allowed a, b)"
        );
    }
}

//! What a congestion control's module exports to be registered: its [`CcDescriptor`]
//! (the `tcp_congestion_ops` fields the engine reads before `init`: name, flags, the
//! receiving host's defaults, a constructor from `cc_params` and the parameters' schema),
//! and [`parse_params`], which every constructor uses to read its `cc_params`.
//! [`super::registry`] lists the descriptors; the algorithms depend on this module only,
//! never on the registry, so the registry's table of every algorithm is no import loop.

use super::{CcFlags, CongestionControl};
use crate::schema::ParamSpec;
use serde::{de::DeserializeOwned, Serialize};

/// Defaults for the receiving host that a testbed running this CC used, applied
/// only where a flow leaves them unset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverDefaults {
    /// The receiver's `net.ipv4.tcp_ecn` (Prague needs an AccECN peer: 3; DCTCP a classic-ECN one: 1).
    pub receiver_ecn: Option<u8>,
    /// The receiving socket's congestion control (DCTCP's CE echo needs DCTCP on
    /// both ends, RFC 8257 §3.2).
    pub receiver_cc: Option<&'static str>,
}

impl ReceiverDefaults {
    /// The flow's own receiver settings (Linux's defaults) apply.
    pub const NONE: ReceiverDefaults = ReceiverDefaults { receiver_ecn: None, receiver_cc: None };
}

/// A CC's constructor from its `cc_params`.
pub type BuildFn = fn(Option<&serde_json::Value>) -> Result<Box<dyn CongestionControl>, String>;
/// A CC's `cc_params` parsed and checked as its constructor would, without building it.
pub type CheckFn = fn(Option<&serde_json::Value>) -> Result<(), String>;

/// One registered congestion control.
#[derive(Clone, Copy)]
pub struct CcDescriptor {
    /// `tcp_congestion_ops.name`, as `sysctl net.ipv4.tcp_congestion_control`.
    pub name: &'static str,
    /// One line for the front end.
    pub doc: &'static str,
    /// A scalable (L4S) congestion control: sends ECT(1) and reacts to CE in proportion (RFC 9331 §4.3).
    pub l4s: bool,
    /// `TCP_CONG_*` flags before `init` (a fallback may drop them afterwards).
    pub flags: CcFlags,
    pub receiver: ReceiverDefaults,
    /// Builds the algorithm from `cc_params` (fields of its `XxxParams`; the
    /// module defaults for those not given).
    pub build: BuildFn,
    /// What `build` checks of the `cc_params`, without building the algorithm
    /// (validation builds nothing; the run builds each flow's CC once).
    pub check: CheckFn,
    /// Whether the algorithm reports a model state (`cc_state`: BBR's bw, min RTT, mode,
    /// gain), which adds per-flow series the memory estimate counts.
    pub reports_state: bool,
    /// The module parameters (`cc_params`), one spec per `XxxParams` field.
    pub params: fn() -> Vec<ParamSpec>,
}

impl std::fmt::Debug for CcDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CcDescriptor").field("name", &self.name).finish_non_exhaustive()
    }
}

/// `cc_params` over `defaults`: every given field replaces the default one. Errors
/// are one line naming the field (`beta: invalid type: string "x", expected u32`).
pub fn parse_params<T: Serialize + DeserializeOwned>(
    cc: &str,
    defaults: T,
    params: Option<&serde_json::Value>,
) -> Result<T, String> {
    let given = match params {
        None | Some(serde_json::Value::Null) => return Ok(defaults),
        Some(serde_json::Value::Object(o)) => o,
        Some(other) => return Err(format!("{cc} parameters must be an object, not {other}")),
    };
    let base = serde_json::to_value(&defaults).map_err(|e| e.to_string())?;
    let serde_json::Value::Object(base) = base else {
        return Err(format!("{cc} has no parameters"));
    };
    // Check field by field so that the error names the offending one.
    for (k, v) in given {
        if !base.contains_key(k) {
            let known: Vec<&str> = base.keys().map(String::as_str).collect();
            return Err(if known.is_empty() {
                format!("{k}: {cc} has no parameters")
            } else {
                format!("{k}: unknown {cc} parameter (known: {})", known.join(", "))
            });
        }
        let mut one = base.clone();
        one.insert(k.clone(), v.clone());
        serde_json::from_value::<T>(serde_json::Value::Object(one)).map_err(|e| format!("{k}: {e}"))?;
    }
    let mut all = base;
    for (k, v) in given {
        all.insert(k.clone(), v.clone());
    }
    serde_json::from_value(serde_json::Value::Object(all)).map_err(|e| e.to_string())
}

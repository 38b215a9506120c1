//! The one table of congestion controls the engine implements.
//!
//! Linux registers each algorithm with `tcp_register_congestion_control()`
//! (net/ipv4/tcp_cong.c) and looks it up by name (`tcp_ca_find`); here every
//! algorithm's module exports a [`CcDescriptor`] and [`TABLE`] lists them. The name
//! lookup ([`super::by_name`], [`super::build`]), the list of names
//! ([`super::KNOWN`]), the receiving host's defaults and the front end's parameter
//! schema ([`specs`]) are all views of that table.
//!
//! Adding a congestion control: one file (or folder) in `cc/` that implements
//! [`super::CongestionControl`] and exports `pub const DESCRIPTOR: CcDescriptor`
//! ([`super::descriptor`]), plus one line in [`TABLE`].

use super::descriptor::CcDescriptor;
use super::{reno, CongestionControl};
use crate::schema::{check_params, CcSpec};

/// Every congestion control, in the order the front end lists them.
pub const TABLE: &[CcDescriptor] = &[
    reno::DESCRIPTOR,
    super::cubic::DESCRIPTOR,
    super::dctcp::DESCRIPTOR,
    super::prague::DESCRIPTOR,
    super::prague::DESCRIPTOR_V06,
    super::bbr::DESCRIPTOR,
    super::bbr2::DESCRIPTOR,
    super::bbr2::DESCRIPTOR_L4S,
    super::bbr3::DESCRIPTOR,
];

const N: usize = TABLE.len();
const NAMES: [&str; N] = {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = TABLE[i].name;
        i += 1;
    }
    names
};
/// The registered names, in table order.
pub const KNOWN: &[&str] = &NAMES;

/// The descriptor registered under `name`.
pub fn find(name: &str) -> Option<&'static CcDescriptor> {
    TABLE.iter().find(|d| d.name == name)
}

/// Build `name` with `params`, checked against the ranges of its parameter schema;
/// an unknown name is an error listing the known ones.
pub fn build(name: &str, params: Option<&serde_json::Value>) -> Result<Box<dyn CongestionControl>, String> {
    let d = find(name).ok_or_else(|| format!("unknown congestion control {name:?} (known: {})", KNOWN.join(", ")))?;
    // The given values against the ranges the schema declares, before a constructor
    // meets a value it cannot take (`Cubic::new` asserts beta < 1024); serde then
    // checks the types.
    if let Some(p) = params {
        check_params(&(d.params)(), p)?;
    }
    (d.build)(params)
}

/// Check `name`'s `cc_params` as [`build`] would (the schema's ranges, then the
/// algorithm's own parsing), without building it.
pub fn check(name: &str, params: Option<&serde_json::Value>) -> Result<(), String> {
    let d = find(name).ok_or_else(|| format!("unknown congestion control {name:?} (known: {})", KNOWN.join(", ")))?;
    if let Some(p) = params {
        check_params(&(d.params)(), p)?;
    }
    (d.check)(params)
}

/// The front end's view of every registered congestion control.
pub fn specs() -> Vec<CcSpec> {
    TABLE.iter().map(spec).collect()
}

fn spec(d: &CcDescriptor) -> CcSpec {
    let f = d.flags;
    let flags = [
        (f.needs_ecn, "needs_ecn"),
        (f.needs_accecn, "needs_accecn"),
        (f.wants_ect1, "wants_ect1"),
        (f.no_fallback_rfc3168, "no_fallback_rfc3168"),
        (f.needs_pacing, "needs_pacing"),
    ];
    let mut rx = serde_json::Map::new();
    if let Some(cc) = d.receiver.receiver_cc {
        rx.insert("receiver_cc".into(), cc.into());
    }
    if let Some(ecn) = d.receiver.receiver_ecn {
        rx.insert("receiver_ecn".into(), ecn.into());
    }
    CcSpec {
        name: d.name,
        doc: d.doc,
        l4s: d.l4s,
        flags: flags.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect(),
        receiver_defaults: serde_json::Value::Object(rx),
        params: (d.params)(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::descriptor::parse_params;
    use super::*;
    use serde_json::json;

    #[test]
    fn every_descriptor_builds_with_its_defaults() {
        for d in TABLE {
            let cc = (d.build)(None).unwrap_or_else(|e| panic!("{}: {e}", d.name));
            assert_eq!(cc.flags(), d.flags, "{}", d.name);
            assert!((d.build)(Some(&json!({}))).is_ok(), "{}", d.name);
            // The spec's defaults are the parameters' defaults: feeding them back builds.
            let defaults: serde_json::Map<String, serde_json::Value> =
                (d.params)().into_iter().filter(|p| !p.default.is_null()).map(|p| (p.name.into(), p.default)).collect();
            (d.build)(Some(&serde_json::Value::Object(defaults))).unwrap_or_else(|e| panic!("{}: {e}", d.name));
        }
    }

    /// The CCs without the optional per-ACK hooks say so, and those with them do not:
    /// the sender skips `pkts_acked` and `in_ack_event` where a CC answers false (as
    /// Linux calls an `icsk_ca_ops` hook only when set). CUBIC's HyStart and Prague's RTT
    /// take `pkts_acked`, DCTCP's α update `in_ack_event`.
    #[test]
    fn the_optional_per_ack_hooks_are_declared_by_the_ccs_that_implement_them() {
        for d in TABLE {
            let cc = (d.build)(None).unwrap();
            let pkts_acked = matches!(d.name, "cubic" | "prague" | "prague-v06");
            assert_eq!(cc.has_pkts_acked(), pkts_acked, "{}", d.name);
            assert_eq!(cc.has_in_ack_event(), d.name == "dctcp", "{}", d.name);
        }
    }

    #[test]
    fn unknown_parameter_is_a_one_line_error_naming_it() {
        for d in TABLE {
            let e = (d.build)(Some(&json!({"no_such_knob": 1}))).err().expect(d.name);
            assert!(e.starts_with("no_such_knob: "), "{}: {e}", d.name);
            assert!(!e.contains('\n'));
        }
        let e = build("dctcp", Some(&json!({"shift_g": "four"}))).err().unwrap();
        assert!(e.starts_with("shift_g: invalid type"), "{e}");
        let e = build("bbr9", None).err().unwrap();
        assert!(e.contains("unknown congestion control \"bbr9\"") && e.contains("prague-v06"), "{e}");
    }

    #[test]
    fn specs_list_every_registered_cc_and_their_params() {
        let specs = specs();
        assert_eq!(specs.iter().map(|s| s.name).collect::<Vec<_>>(), KNOWN);
        for (s, d) in specs.iter().zip(TABLE) {
            // Every spec names a field of the parameters and vice versa.
            let cc_defaults = (d.build)(None).ok().map(|_| ());
            assert!(cc_defaults.is_some());
            let mut names: Vec<&str> = s.params.iter().map(|p| p.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), s.params.len(), "{}: duplicate spec", s.name);
            for p in &s.params {
                assert!(!p.doc.is_empty() && !p.doc.contains('\n'), "{}.{}", s.name, p.name);
            }
        }
        let prague = specs.iter().find(|s| s.name == "prague").unwrap();
        assert!(prague.l4s && prague.flags.contains(&"wants_ect1"));
        assert_eq!(prague.receiver_defaults, json!({"receiver_ecn": 3}));
        let dctcp = specs.iter().find(|s| s.name == "dctcp").unwrap();
        assert!(!dctcp.l4s && dctcp.flags == vec!["needs_ecn"]);
        assert_eq!(dctcp.receiver_defaults, json!({"receiver_cc": "dctcp", "receiver_ecn": 1}));
        assert_eq!(specs.iter().find(|s| s.name == "cubic").unwrap().receiver_defaults, json!({}));
    }

    #[test]
    fn specs_name_every_parameter_field_with_its_default() {
        use super::super::{cubic::CubicParams, dctcp::DctcpParams, prague::PragueParams};
        let to = |v: Result<serde_json::Value, serde_json::Error>| v.unwrap();
        let cases = [
            ("cubic", to(serde_json::to_value(CubicParams::default()))),
            ("dctcp", to(serde_json::to_value(DctcpParams::default()))),
            ("prague", to(serde_json::to_value(PragueParams::default()))),
            ("prague-v06", to(serde_json::to_value(PragueParams::v06()))),
        ];
        for (name, defaults) in cases {
            let specs = (find(name).unwrap().params)();
            let mut fields: Vec<&str> = defaults.as_object().unwrap().keys().map(String::as_str).collect();
            let mut named: Vec<&str> = specs.iter().map(|p| p.name).collect();
            fields.sort_unstable();
            named.sort_unstable();
            assert_eq!(named, fields, "{name}");
            for p in &specs {
                assert_eq!(p.default, defaults[p.name], "{name}.{}", p.name);
            }
        }
        assert!((find("reno").unwrap().params)().is_empty());
    }

    #[test]
    fn views_agree_with_the_table() {
        for name in KNOWN {
            assert!(super::super::by_name(name).is_some(), "{name}");
            assert!(find(name).is_some());
        }
        assert!(super::super::by_name("nope").is_none());
        // prague-v06 is Prague at the v0.6 module defaults.
        let v06 = parse_params("prague-v06", super::super::prague::PragueParams::v06(), None).unwrap();
        assert_eq!(v06.rtt_transition, 500);
    }
}

#[cfg(test)]
mod descriptor_tests {
    use super::*;

    #[test]
    fn reports_state_is_what_the_algorithm_reports() {
        for d in TABLE {
            let cc = (d.build)(None).expect("defaults build");
            let reports = cc.cc_state(&super::super::CcSock::new(1448, 10)) != super::super::CcState::default();
            assert_eq!(d.reports_state, reports, "{}", d.name);
        }
    }

    #[test]
    fn check_refuses_what_build_refuses() {
        let cases = [
            ("cubic", serde_json::json!({"beta": 5000})),
            ("bbr3", serde_json::json!({"nope": 1})),
            ("bbr2", serde_json::json!({"pacing_gain": [1.0]})),
            ("prague", serde_json::json!({"version": "v99"})),
            ("reno", serde_json::json!({"x": 1})),
        ];
        for (name, p) in cases {
            let built = build(name, Some(&p)).err().expect("build refuses");
            assert_eq!(check(name, Some(&p)), Err(built), "{name}");
        }
        for d in TABLE {
            assert_eq!(check(d.name, None), Ok(()), "{}", d.name);
        }
    }
}

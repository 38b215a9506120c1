//! The command line (`l4slab-emu run|cleanup`, the process protocol of
//! `docs/emulator.md`), shared by the `l4slab-emu` binary and the Python extension's
//! `emu_main` (`python -m l4slab._emu`: the emulator `pip install` ships).

use crate::emu::{self, Fail, RunOpts};
use std::path::PathBuf;

const USAGE: &str = "usage: l4slab-emu run --config CONFIG.json --out DIR --ready-file PATH [--prefix l4se] [--command-flows I,J] | l4slab-emu cleanup [--prefix l4se] [--all]";

/// The command and its options (name, value).
type Parsed = (String, Vec<(String, Option<String>)>);

fn parse(args: &[String]) -> Result<Parsed, Fail> {
    let refuse = |m: String| Fail { code: 2, msg: m };
    let cmd = args.first().cloned().ok_or_else(|| refuse(USAGE.into()))?;
    let mut opts = Vec::new();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--all" => opts.push((a.clone(), None)),
            "--config" | "--out" | "--ready-file" | "--prefix" | "--command-flows" => {
                let v = it.next().ok_or_else(|| refuse(format!("{a}: missing value")))?;
                opts.push((a.clone(), Some(v.clone())));
            }
            "-h" | "--help" => return Err(Fail { code: 0, msg: USAGE.into() }),
            _ => return Err(refuse(format!("{a}: unknown argument ({USAGE})"))),
        }
    }
    Ok((cmd, opts))
}

fn main_inner(args: &[String]) -> Result<(), Fail> {
    let (cmd, opts) = parse(args)?;
    let get = |k: &str| opts.iter().rev().find(|(n, _)| n == k).and_then(|(_, v)| v.clone());
    let prefix = get("--prefix").unwrap_or_else(|| "l4se".into());
    match cmd.as_str() {
        "run" => {
            let need = |k: &str| {
                get(k).map(PathBuf::from).ok_or_else(|| Fail { code: 2, msg: format!("{k}: required ({USAGE})") })
            };
            let mut command_flows = Vec::new();
            for part in get("--command-flows").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
                let i = part.trim().parse::<usize>().map_err(|_| Fail {
                    code: 2,
                    msg: format!("--command-flows: {part:?} is not a flow index (allowed: comma-separated integers)"),
                })?;
                command_flows.push(i);
            }
            let o = RunOpts {
                config: need("--config")?,
                out: need("--out")?,
                ready_file: need("--ready-file")?,
                prefix,
                command_flows,
            };
            emu::run(&o)
        }
        "cleanup" => {
            let n = emu::cleanup(&prefix, opts.iter().any(|(k, _)| k == "--all"))?;
            println!("{n}");
            Ok(())
        }
        "-h" | "--help" => Err(Fail { code: 0, msg: USAGE.into() }),
        other => Err(Fail { code: 2, msg: format!("{other}: unknown command ({USAGE})") }),
    }
}

/// Run the command line `args` (without the program name); the exit status.
pub fn main_with(args: Vec<String>) -> i32 {
    // A panic must not print a backtrace; the namespaces' guard still runs while unwinding.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "internal error".into());
        eprintln!("l4slab-emu: internal error: {}", msg.lines().next().unwrap_or(""));
    }));
    match std::panic::catch_unwind(|| main_inner(&args)) {
        Ok(Ok(())) => 0,
        Ok(Err(f)) => {
            if f.code == 0 {
                println!("{}", f.msg);
            } else {
                eprintln!("l4slab-emu: {}", f.msg);
            }
            f.code
        }
        Err(_) => 1,
    }
}

//! `l4slab-emu`: the emulator's command line (the process protocol of
//! `docs/emulator.md`).
//!
//! ```text
//! l4slab-emu run --config CONFIG.json --out DIR --ready-file PATH [--prefix l4se]
//! l4slab-emu cleanup [--prefix l4se] [--all]
//! ```

use l4slab_emu::emu::{self, Fail, RunOpts};
use std::path::PathBuf;

const USAGE: &str = "usage: l4slab-emu run --config CONFIG.json --out DIR --ready-file PATH [--prefix l4se] | l4slab-emu cleanup [--prefix l4se] [--all]";

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
            "--config" | "--out" | "--ready-file" | "--prefix" => {
                let v = it.next().ok_or_else(|| refuse(format!("{a}: missing value")))?;
                opts.push((a.clone(), Some(v.clone())));
            }
            "-h" | "--help" => return Err(Fail { code: 0, msg: USAGE.into() }),
            _ => return Err(refuse(format!("{a}: unknown argument ({USAGE})"))),
        }
    }
    Ok((cmd, opts))
}

fn main_inner() -> Result<(), Fail> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, opts) = parse(&args)?;
    let get = |k: &str| opts.iter().rev().find(|(n, _)| n == k).and_then(|(_, v)| v.clone());
    let prefix = get("--prefix").unwrap_or_else(|| "l4se".into());
    match cmd.as_str() {
        "run" => {
            let need = |k: &str| {
                get(k).map(PathBuf::from).ok_or_else(|| Fail { code: 2, msg: format!("{k}: required ({USAGE})") })
            };
            let o =
                RunOpts { config: need("--config")?, out: need("--out")?, ready_file: need("--ready-file")?, prefix };
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

fn main() {
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
    match std::panic::catch_unwind(main_inner) {
        Ok(Ok(())) => {}
        Ok(Err(f)) => {
            if f.code == 0 {
                println!("{}", f.msg);
            } else {
                eprintln!("l4slab-emu: {}", f.msg);
            }
            std::process::exit(f.code);
        }
        Err(_) => std::process::exit(1),
    }
}

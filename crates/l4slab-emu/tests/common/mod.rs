//! What the emulator's integration tests share: a work directory per test, JSON reads,
//! and an `l4slab-emu run` started and waited for until it is ready.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The work directory `l4slab-TAG-PID` in the system's temporary directory (created).
pub fn work_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("l4slab-{tag}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A JSON file; a missing or bad one fails the test naming the file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `l4slab-emu run` of `cfg` (written to `dir/scenario.json`) into `dir` with namespace
/// prefix `prefix`, returned once it has written its ready file (with that file's content).
pub fn start_emu(dir: &Path, cfg: &serde_json::Value, prefix: &str) -> (Child, serde_json::Value) {
    let cfg_path = dir.join("scenario.json");
    fs::write(&cfg_path, cfg.to_string()).unwrap();
    let ready = dir.join("ready.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_l4slab-emu"))
        .args(["run", "--config", cfg_path.to_str().unwrap(), "--out", dir.to_str().unwrap()])
        .args(["--ready-file", ready.to_str().unwrap(), "--prefix", prefix])
        .spawn()
        .expect("start l4slab-emu");
    let t = Instant::now();
    while !ready.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "no ready file");
        if let Ok(Some(st)) = child.try_wait() {
            panic!("l4slab-emu exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = read_json(&ready);
    (child, r)
}

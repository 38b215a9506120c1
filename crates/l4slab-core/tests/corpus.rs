//! Bit-identity corpus: the engine's results for a fixed set of scenarios must not
//! change unless a commit says why.
//!
//! `tests/corpus/scenarios/*.json` are engine configs covering every qdisc, every
//! congestion control, UDP, TSO on/off, drop injection, multi-flow, warm-up and the
//! sojourn trace (written by `tests/corpus/make_corpus.py`). For each, the sha256 of
//! the run's canonical results -- the serialised `RunResults` with sorted keys,
//! without `events` (a property of the event representation, not of the network) --
//! is recorded in `tests/corpus/sha256.txt`. `L4SLAB_CORPUS_BLESS=1` rewrites that file.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The canonical results of one run: sorted-key JSON without the event count.
fn canonical(results: &l4slab_core::RunResults) -> Vec<u8> {
    let mut v = serde_json::to_value(results).expect("results serialise");
    v.as_object_mut().expect("results are an object").remove("events");
    // serde_json's Map is a BTreeMap (no `preserve_order`), so keys come out sorted.
    serde_json::to_vec(&v).expect("value serialises")
}

fn run_hash(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("corpus config readable");
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_str(&text).expect("corpus config parses");
    let results = l4slab_core::run(&cfg).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let digest = Sha256::digest(canonical(&results));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_expected(file: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (hash, name) = l.split_once("  ").expect("`HASH  NAME` lines");
            (name.to_string(), hash.to_string())
        })
        .collect()
}

#[test]
fn corpus_results_are_bit_identical() {
    let dir = corpus_dir();
    let mut configs: Vec<PathBuf> = std::fs::read_dir(dir.join("scenarios"))
        .expect("corpus scenarios")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    configs.sort();
    assert!(configs.len() >= 40, "the corpus needs at least 40 scenarios, has {}", configs.len());
    // Runs are independent: spread them over the machine's cores.
    let n_threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(configs.len());
    let chunks: Vec<Vec<PathBuf>> =
        (0..n_threads).map(|t| configs.iter().skip(t).step_by(n_threads).cloned().collect()).collect();
    let mut actual = BTreeMap::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), run_hash(p)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            actual.extend(h.join().expect("corpus thread"));
        }
    });
    let file = dir.join("sha256.txt");
    if std::env::var_os("L4SLAB_CORPUS_BLESS").is_some() {
        let mut text = String::from("# sha256 of canonical results per corpus scenario (tests/corpus.rs)\n");
        for (name, hash) in &actual {
            text.push_str(&format!("{hash}  {name}\n"));
        }
        std::fs::write(&file, text).expect("write sha256.txt");
        return;
    }
    let expected = read_expected(&file);
    let mut diffs = Vec::new();
    for (name, hash) in &actual {
        match expected.get(name) {
            Some(h) if h == hash => {}
            Some(_) => diffs.push(format!("{name}: results changed")),
            None => diffs.push(format!("{name}: no recorded hash")),
        }
    }
    for name in expected.keys().filter(|n| !actual.contains_key(*n)) {
        diffs.push(format!("{name}: recorded but the scenario is missing"));
    }
    assert!(diffs.is_empty(), "corpus mismatches ({} of {}):\n{}", diffs.len(), actual.len(), diffs.join("\n"));
}

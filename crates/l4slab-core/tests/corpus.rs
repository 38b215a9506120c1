//! Bit-identity corpus: the engine's results for a fixed set of scenarios must not
//! change unless a commit says why.
//!
//! `tests/corpus/scenarios/*.json` are engine configs covering every qdisc, every
//! congestion control, UDP, TSO on/off, drop injection, multi-flow, warm-up and the
//! sojourn trace (written by `tests/corpus/make_corpus.py`). For each, the sha256 of
//! the run's canonical results -- the serialised `RunResults` with sorted keys,
//! without `events` (a property of the event representation, not of the network) --
//! is recorded in `tests/corpus/sha256.txt`. `L4SLAB_CORPUS_BLESS=1` rewrites that file.
//!
//! The corpus belongs to a model version (`src/model.rs`): its digest (sha256 over the
//! `HASH  NAME\n` lines sorted by name) must be the one `MODELS` records for the
//! current `MODEL_VERSION`, so a commit that re-blesses the corpus must also append a
//! new model version, or this test fails (also right after a bless).

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

/// The digest `model::MODELS` records for a corpus.
fn corpus_digest(entries: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (name, hash) in entries {
        h.update(format!("{hash}  {name}\n").as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The corpus `entries` (name -> result hash) belong to the current model version.
fn check_model(entries: &BTreeMap<String, String>) -> Result<(), String> {
    l4slab_core::model::check_history()?;
    let digest = corpus_digest(entries);
    if digest != l4slab_core::MODEL_CORPUS_DIGEST {
        let next = l4slab_core::MODEL_VERSION + 1;
        return Err(format!(
            "the result corpus changed (digest {digest}) but model version {} records {}: append \
             ({next}, \"{digest}\") to MODELS in crates/l4slab-core/src/model.rs",
            l4slab_core::MODEL_VERSION,
            l4slab_core::MODEL_CORPUS_DIGEST
        ));
    }
    Ok(())
}

#[test]
fn model_version_records_the_corpus_digest() {
    // Quick (no run): the recorded corpus against the current model version.
    let expected = read_expected(&corpus_dir().join("sha256.txt"));
    if let Err(e) = check_model(&expected) {
        panic!("{e}");
    }
}

#[test]
fn a_changed_corpus_needs_a_new_model_version() {
    let mut entries = read_expected(&corpus_dir().join("sha256.txt"));
    assert_eq!(check_model(&entries), Ok(()));
    let first = entries.keys().next().expect("a corpus entry").clone();
    entries.insert(first, "0".repeat(64));
    let err = check_model(&entries).unwrap_err();
    assert!(err.starts_with("the result corpus changed"), "{err}");
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
        if let Err(e) = check_model(&actual) {
            panic!("blessed; now {e}");
        }
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
    if let Err(e) = check_model(&expected) {
        panic!("{e}");
    }
}

//! The engine's module graph has no cycles.
//!
//! Each top-level module (`cc`, `tcp`, `qdisc`, `net`, ...) may use the modules below it,
//! never one that uses it back: `packet` and `qdisc` know nothing of `tcp` or `sim`, `cc`
//! nothing of `tcp`, `net`/`traffic`/`trace` nothing of `sim`. The test reads every source
//! file, collects the `crate::MODULE` paths outside `#[cfg(test)]` code and comments, and
//! fails naming a cycle if the graph has one. Within each of those modules the files
//! (and folders) form no cycle either: `tcp/sender.rs` may use `tcp/rtx_queue.rs` or be
//! used by it, not both (the `super::FILE` and `crate::MODULE::FILE` paths).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Top-level module of a file under `src/` (`None` for the crate root).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib").then_some(name)
}

/// The lines of `text` outside `#[cfg(test)]` items: the item after the attribute is
/// skipped whole (a `mod x;` line, or a braced block up to its closing brace).
fn non_test_lines(text: &str) -> Vec<&str> {
    let mut kept = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("#[cfg(test)]") {
            kept.push(line);
            continue;
        }
        let (mut depth, mut opened) = (0i64, false);
        for item in lines.by_ref() {
            let code = item.split("//").next().unwrap_or("");
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            opened |= code.contains('{');
            if (!opened && code.trim_end().ends_with(';')) || (opened && depth <= 0) {
                break;
            }
        }
    }
    kept
}

/// `crate::X` references in the non-test, non-comment part of `text`, including
/// `use crate::{a, b::C}` groups spread over several lines.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let word = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let is_module = |n: &str| n.chars().next().is_some_and(|c| c.is_lowercase());
    let mut refs = BTreeSet::new();
    // Inside a `crate::{...}` group: brace depth (0 = outside) and whether the next
    // word starts a top-level item of the group.
    let (mut depth, mut item_start) = (0usize, false);
    for line in non_test_lines(text) {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = code.split("//").next().unwrap_or("");
        let group = if depth > 0 {
            Some(code)
        } else {
            code.find("crate::{").map(|i| {
                (depth, item_start) = (1, true);
                &code[i + "crate::{".len()..]
            })
        };
        for (i, ch) in group.unwrap_or("").char_indices() {
            if depth == 0 {
                break;
            }
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 1 => item_start = true,
                c if item_start && depth == 1 && !c.is_whitespace() => {
                    let name = word(&group.unwrap()[i..]);
                    if is_module(&name) {
                        refs.insert(name);
                    }
                    item_start = false;
                }
                _ => {}
            }
        }
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name = word(rest);
            if is_module(&name) {
                refs.insert(name);
            }
        }
    }
    refs
}

#[test]
fn the_reader_sees_multi_line_groups_and_code_after_test_items() {
    let text = "use crate::{\n    net::Link,\n    qdisc::{self, Qdisc},\n};\n#[cfg(test)]\nmod testutil;\n\
                #[cfg(test)]\nmod tests {\n    use crate::sim;\n}\nfn f() { crate::time::secs(0); }\n";
    let refs: Vec<String> = crate_refs(text).into_iter().collect();
    assert_eq!(refs, vec!["net", "qdisc", "time"]);
}

fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&src, &file) else { continue };
        let text = std::fs::read_to_string(&file).expect("readable source");
        let deps = graph.entry(module.clone()).or_default();
        for r in crate_refs(&text) {
            if r != module {
                deps.insert(r);
            }
        }
    }
    // Only edges between modules (not items re-exported at the root such as `VERSION`).
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for dep in graph.get(node).into_iter().flatten() {
            match state.get(dep.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|n| n == dep).expect("on stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(dep.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(dep, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn engine_modules_form_no_cycle() {
    let graph = module_graph();
    for core in ["cc", "tcp", "qdisc", "net", "packet", "sim", "traffic", "trace"] {
        assert!(graph.contains_key(core), "module {core} not found; the test reads the wrong tree");
    }
    if std::env::var_os("L4SLAB_PRINT_MODULES").is_some() {
        for (m, d) in &graph {
            println!("{m} -> {d:?}");
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        let edges: Vec<String> = graph.iter().map(|(m, d)| format!("{m} -> {d:?}")).collect();
        panic!("module cycle: {}\n{}", cycle.join(" -> "), edges.join("\n"));
    }
}

/// For the top-level module folder `dir`: its files and sub-folders (`tcp/sender.rs` is
/// `sender`, `cc/prague/*.rs` is `prague`) and the siblings each names outside test code
/// (`super::NAME` from a file, `super::super::NAME` from a sub-folder's file,
/// `crate::DIR::NAME` from either).
fn file_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let top = dir.file_name().unwrap().to_string_lossy().into_owned();
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let node_of = |file: &Path| -> Option<(String, bool)> {
        let rel = file.strip_prefix(dir).unwrap();
        let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
        // A folder's `mod.rs` sits at its siblings' level (`super::` is the module).
        let nested = rel.components().count() > 1 && !file.ends_with("mod.rs");
        let name = first.trim_end_matches(".rs").to_string();
        (name != "mod" && !file.ends_with("tests.rs")).then_some((name, nested))
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        if let Some((name, _)) = node_of(file) {
            graph.entry(name).or_default();
        }
    }
    let word = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    for file in &files {
        let Some((name, nested)) = node_of(file) else { continue };
        let text = std::fs::read_to_string(file).expect("readable source");
        let prefixes =
            [if nested { "super::super::".to_string() } else { "super::".to_string() }, format!("crate::{top}::")];
        let mut refs = BTreeSet::new();
        for line in non_test_lines(&text) {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let code = code.split("//").next().unwrap_or("");
            for prefix in &prefixes {
                for (i, _) in code.match_indices(prefix.as_str()) {
                    // `super::super::x` read from a top-level file is not a sibling.
                    if !nested && code[..i].ends_with("super::") {
                        continue;
                    }
                    let r = word(&code[i + prefix.len()..]);
                    if r != name && graph.contains_key(&r) {
                        refs.insert(r);
                    }
                }
            }
        }
        graph.get_mut(&name).unwrap().extend(refs);
    }
    graph
}

#[test]
fn the_files_of_each_module_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for module in ["cc", "tcp", "qdisc", "net", "traffic", "trace"] {
        let graph = file_graph(&src.join(module));
        assert!(graph.len() > 1, "{module}: no files found; the test reads the wrong tree");
        if let Some(cycle) = find_cycle(&graph) {
            panic!("file cycle in {module}/: {}", cycle.join(" -> "));
        }
    }
    // The reader sees both kinds of path: the CCs use the descriptor, the registry them.
    let cc = file_graph(&src.join("cc"));
    assert!(cc["registry"].contains("cubic") && cc["cubic"].contains("descriptor"), "{cc:?}");
    assert!(cc["prague"].contains("descriptor"), "{cc:?}");
}

#[test]
fn the_leaves_stay_leaves() {
    let graph = module_graph();
    let uses = |m: &str, d: &str| graph.get(m).is_some_and(|s| s.contains(d));
    assert!(!uses("qdisc", "packet") && !uses("qdisc", "config") && !uses("qdisc", "sim"), "qdiscs are sans-IO");
    assert!(!uses("cc", "tcp"), "cc must not use tcp");
    assert!(!uses("packet", "tcp") && !uses("packet", "cc"), "packet is a wire type");
    for m in ["net", "traffic", "trace"] {
        assert!(!uses(m, "sim"), "{m} must not use sim");
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).expect("a cycle"), vec!["a", "b", "c", "a"]);
    g.get_mut("c").unwrap().clear();
    assert!(find_cycle(&g).is_none());
}

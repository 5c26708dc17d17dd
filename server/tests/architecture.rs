//! The shape of the code, checked (docs/ARCHITECTURE.md):
//!
//! - the core crate depends on no HTTP server, UI or `tower`;
//! - no import cycle among the modules of `countersign-core` (a concern's
//!   folder groups modules: each is a node) or `server`;
//! - no use case reads the system clock: `Utc::now()` appears only in
//!   `crates/core/src/platform/clock.rs`;
//! - no source file holds more than 600 lines of code (tests apart: a
//!   trailing `#[cfg(test)] mod`, or a whole file declared `#[cfg(test)]`)
//!   without saying at its top why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The files that are unit tests as a whole: declared `#[cfg(test)] mod x;`.
fn test_files(src: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in sources(src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let stem = file.file_stem().unwrap().to_string_lossy().to_string();
        let dir = match stem.as_str() {
            "mod" | "lib" | "main" => file.parent().unwrap().to_owned(),
            _ => file.parent().unwrap().join(&stem),
        };
        for pair in lines.windows(2) {
            let Some(name) = pair[1].strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) else { continue };
            if pair[0] == "#[cfg(test)]" {
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// The file's code without its unit tests (by convention, a `#[cfg(test)]`
/// module at the end) and without comments.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| {
            let item = w[1].trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            w[0].trim() == "#[cfg(test)]" && item.starts_with("mod ")
        })
        .unwrap_or(lines.len());
    lines[..end].iter().filter(|l| !l.trim_start().starts_with("//")).copied().collect::<Vec<_>>().join("\n")
}

/// Folders that group the modules of one concern (docs/ARCHITECTURE.md,
/// "Layout"): each module in them is a node of the import graph, as a
/// top-level module is.
const CONCERNS: &[&str] = &["intake", "decision", "platform"];

/// Modules inside another module's folder that are nodes of their own: a
/// concern's module that also holds code (`commit`, `evidence`, `people`,
/// `notify`) and the modules it groups, and a module's use cases that sit
/// above its rules (`approval::approve` decides with the tokens and keys
/// beside it; a policy's `explain` and recorded backtest read the
/// proposals the policy decides; a payables' batch builds on proposals,
/// approvals and the commit, which read the rest of `payables`).
const NESTED: &[&str] = &[
    "commit::operations",
    "decision::approval::approve",
    "decision::delegation::manage",
    "decision::policy::backtest::recorded",
    "decision::policy::explain",
    "evidence::exports",
    "evidence::human_loop",
    "evidence::tlog",
    "notify::outbound",
    "notify::slack",
    "notify::slack::press",
    "notify::teams",
    "notify::teams::press",
    "notify::webhooks",
    "notify::worker",
    "payables::batches",
    "people::actors",
    "people::client_ip",
    "people::passkeys",
    "people::password",
    "people::throttle",
];

/// The node of the import graph a source file belongs to: its crate-level
/// module (`store`, `http`, …), or the module in a concern's folder
/// (`decision::policy`), or a listed nested module.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    let first = parts.first()?.clone();
    if parts.len() == 1 && (first == "lib" || first == "main") {
        return None;
    }
    Some(node_of(&parts).unwrap_or(first))
}

/// The longest listed node a module path starts with (a concern's module,
/// or a nested one), if any.
fn node_of(parts: &[String]) -> Option<String> {
    (2..=parts.len().min(4)).rev().map(|k| parts[..k].join("::")).find(|path| {
        NESTED.contains(&path.as_str()) || (path.matches("::").count() == 1 && CONCERNS.contains(&parts[0].as_str()))
    })
}

/// The module paths `use` trees and paths name after `crate::` at the start
/// of `text` (`a::b`, and `{a, b::{c, d}}` expanded).
fn paths_after(text: &str) -> Vec<String> {
    let ident = |t: &str| t.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut items = Vec::new();
        let mut start = 0;
        for (i, ch) in group.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&group[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return items.into_iter().flat_map(|item| paths_after(item.trim())).collect();
    }
    let mut path = Vec::new();
    let mut rest = text;
    loop {
        let name = ident(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        path.push(name);
        match rest.strip_prefix("::") {
            Some(next) if next.starts_with('{') => {
                let prefix = path.join("::");
                return paths_after(next).into_iter().map(|p| format!("{prefix}::{p}")).collect();
            }
            Some(next) => rest = next,
            None => break,
        }
    }
    if path.is_empty() {
        Vec::new()
    } else {
        vec![path.join("::")]
    }
}

/// The nodes a piece of code refers to (`crate::x`, `crate::x::y::Z`, and
/// the paths inside `use crate::{x, y::{z, w}}`).
fn referenced(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        for path in paths_after(rest) {
            let parts: Vec<String> = path.split("::").map(str::to_owned).collect();
            if let Some(node) = node_of(&parts).filter(|n| modules.contains(n)) {
                found.insert(node);
            } else if modules.contains(&parts[0]) {
                found.insert(parts[0].clone());
            }
        }
    }
    found
}

/// The cycles (strongly connected components of more than one module) of a
/// crate's module graph, each sorted.
fn cycles(src: &Path) -> Vec<Vec<String>> {
    let tests = test_files(src);
    let files: Vec<PathBuf> = sources(src).into_iter().filter(|f| !tests.contains(f)).collect();
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = top_module(src, file) else { continue };
        let refs = referenced(&code_of(file), &modules);
        // A module and the modules nested in it refer to each other as a
        // module and its children do: no edge.
        let related =
            |r: &String| r == &module || r.starts_with(&format!("{module}::")) || module.starts_with(&format!("{r}::"));
        edges.entry(module.clone()).or_default().extend(refs.into_iter().filter(|r| !related(r)));
    }
    // Tarjan's strongly connected components.
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit(w: &mut Walk<'_>, v: &str) {
        w.index.insert(v.to_owned(), w.next);
        w.low.insert(v.to_owned(), w.next);
        w.next += 1;
        w.stack.push(v.to_owned());
        w.on_stack.insert(v.to_owned());
        for u in w.edges.get(v).cloned().unwrap_or_default() {
            if !w.index.contains_key(&u) {
                visit(w, &u);
                let low = w.low[v].min(w.low[&u]);
                w.low.insert(v.to_owned(), low);
            } else if w.on_stack.contains(&u) {
                let low = w.low[v].min(w.index[&u]);
                w.low.insert(v.to_owned(), low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack.remove(&u);
                let done = u == v;
                component.push(u);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in modules {
        if !walk.index.contains_key(&v) {
            visit(&mut walk, &v);
        }
    }
    walk.found
}

#[test]
fn the_modules_of_each_crate_form_no_import_cycle() {
    for krate in ["crates/core/src", "server/src"] {
        let found = cycles(&repo().join(krate));
        assert!(found.is_empty(), "{krate}: modules that import each other, directly or not: {found:?}");
    }
}

#[test]
fn only_the_clock_module_reads_the_system_clock() {
    let clock = repo().join("crates/core/src/platform/clock.rs");
    let mut offenders = Vec::new();
    for krate in ["crates/core/src", "server/src", "app/src"] {
        for file in sources(&repo().join(krate)) {
            if file == clock {
                continue;
            }
            for (i, line) in code_of(&file).lines().enumerate() {
                if line.contains("Utc::now()") || line.contains("SystemTime::now()") {
                    offenders.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "take the time from the clock (deps::Clock, clock::system_now):\n{}",
        offenders.join("\n")
    );
}

/// `clock::system_now` is the system's time for what is not a use case's
/// decision: the store stamping when it wrote a row (audit entries, the
/// registry's `created_at`, the change log), and the command line's edge
/// (`cli.rs` and the operator's commands it calls, `operator.rs`), and
/// the wire's `date` header on the HTTP/1.1 long-polls answered without
/// hyper (`http/held.rs`, stamped from the system clock as hyper stamps its own).
/// A use case takes the time from its `Clock` (or a `now` its caller read).
#[test]
fn only_the_store_and_the_command_line_read_the_system_time() {
    let allowed = |file: &Path| {
        file.starts_with(repo().join("crates/core/src/store"))
            || file.ends_with("crates/core/src/platform/clock.rs")
            || file.ends_with("server/src/cli.rs")
            || file.ends_with("server/src/operator.rs")
            || file.ends_with("server/src/http/held.rs")
    };
    let mut offenders = Vec::new();
    for krate in ["crates/core/src", "server/src", "app/src"] {
        for file in sources(&repo().join(krate)) {
            if allowed(&file) {
                continue;
            }
            for (i, line) in code_of(&file).lines().enumerate() {
                if line.contains("system_now()") {
                    offenders.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "a use case takes the time from its Clock:\n{}", offenders.join("\n"));
}

/// The files of a crate with more than 600 lines of code (blank lines,
/// comments and tests apart) and no "Why this file is long:" at their top.
fn long_files(src: &Path) -> Vec<String> {
    let tests = test_files(src);
    let mut long = Vec::new();
    for file in sources(src).into_iter().filter(|f| !tests.contains(f)) {
        let lines = code_of(&file).lines().filter(|l| !l.trim().is_empty()).count();
        let head: String = std::fs::read_to_string(&file).unwrap().lines().take(30).collect::<Vec<_>>().join("\n");
        if lines > 600 && !head.contains("Why this file is long:") {
            long.push(format!("{} ({lines} lines of code)", file.display()));
        }
    }
    long
}

#[test]
fn no_file_holds_more_than_600_lines_of_code_without_a_reason_at_its_top() {
    let long: Vec<String> = ["crates/core/src", "server/src", "app/src", "crates/domain/src"]
        .iter()
        .flat_map(|krate| long_files(&repo().join(krate)))
        .collect();
    assert!(long.is_empty(), "split these, or say at their top \"Why this file is long:\": {long:?}");
}

#[test]
fn the_core_depends_on_no_http_server_ui_or_tower() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", "countersign-core", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(repo())
        .output()
        .expect("cargo tree");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: BTreeSet<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(names.contains("sqlx"), "the tree was read: {names:?}");
    for forbidden in
        ["axum", "axum-core", "leptos", "leptos_axum", "tower", "tower-http", "tower-sessions", "reqwest", "hyper"]
    {
        assert!(!names.contains(forbidden), "countersign-core depends on {forbidden}");
    }
}

/// The checks above can fail: a planted cycle and a planted long file are
/// found, and a test-only file is left out of both.
#[test]
fn the_checks_find_what_they_look_for() {
    let dir = std::env::temp_dir().join(format!("countersign-architecture-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n#[cfg(test)]\nmod t;\n");
    write("a.rs", "use crate::b::Thing;\n");
    write("b/mod.rs", "mod inner;\n");
    write("b/inner.rs", "use crate::{c, a::Other};\n");
    write("c.rs", "// crate::a is only named in a comment\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n");
    write("t.rs", "use crate::c;\n");
    assert_eq!(cycles(&src), vec![vec!["a".to_owned(), "b".to_owned()]]);
    write("t.rs", "use crate::a;\n");
    write("c.rs", "use crate::t;\n");
    assert_eq!(cycles(&src), vec![vec!["a".to_owned(), "b".to_owned()]], "a test-only file is no node");
    // In a concern's folder each module is a node: two that import each
    // other are a cycle, one that imports its sibling is not.
    std::fs::create_dir_all(src.join("decision")).unwrap();
    write("decision/mod.rs", "pub mod x;\npub mod y;\n");
    write("decision/x.rs", "use crate::decision::{y::Thing};\n");
    write("decision/y.rs", "use crate::store;\n");
    assert_eq!(cycles(&src), vec![vec!["a".to_owned(), "b".to_owned()]]);
    write("decision/y.rs", "use crate::{decision::x};\n");
    assert_eq!(
        cycles(&src),
        vec![vec!["a".to_owned(), "b".to_owned()], vec!["decision::x".to_owned(), "decision::y".to_owned()]]
    );
    std::fs::remove_dir_all(src.join("decision")).unwrap();
    assert!(test_files(&src).contains(&src.join("t.rs")));
    let long = (0..601).map(|i| format!("const C{i}: u8 = 0;")).collect::<Vec<_>>().join("\n");
    write("c.rs", &long);
    write("t.rs", &long);
    assert_eq!(long_files(&src), vec![format!("{} (601 lines of code)", src.join("c.rs").display())]);
    write("c.rs", &format!("//! Why this file is long: planted.\n{long}"));
    assert!(long_files(&src).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

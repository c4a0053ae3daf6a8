//! ARCHITECTURE.md's crate graph is the real one: the table between the
//! `crate-graph` markers lists every workspace member and, for each, the
//! refstore crates it depends on (normal dependencies), and `cargo
//! metadata` must say the same. A crate added, removed or given a new
//! dependency without the document changing fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph `cargo metadata` reports for the workspace (members only, their
/// normal dependencies on other members).
fn cargo_graph(workspace: &Path) -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace)
        .output()
        .expect("cannot run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().expect("packages");
    let members: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .filter(|name| members.contains(name))
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

/// The graph ARCHITECTURE.md's table states: first column the crate, last
/// column its dependencies, each name in backquotes.
fn documented_graph(doc: &str) -> Graph {
    let begin = doc
        .find("<!-- crate-graph: begin -->")
        .expect("ARCHITECTURE.md has no crate-graph table");
    let end = doc[begin..]
        .find("<!-- crate-graph: end -->")
        .expect("the crate-graph table has no end marker")
        + begin;
    let names = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    doc[begin..end]
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            let name = names(cells[0]).into_iter().next().expect("a crate name");
            let deps = names(cells[cells.len() - 1]).into_iter().collect();
            (name, deps)
        })
        .collect()
}

#[test]
fn architecture_states_the_real_crate_graph() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(workspace.join("ARCHITECTURE.md")).unwrap();
    let documented = documented_graph(&doc);
    let real = cargo_graph(&workspace);
    let mut differences = Vec::new();
    for (name, deps) in &real {
        match documented.get(name) {
            None => differences.push(format!("{name} is missing from the table")),
            Some(stated) if stated != deps => differences.push(format!(
                "{name}: the table says {stated:?}, Cargo.toml says {deps:?}"
            )),
            Some(_) => {}
        }
    }
    for name in documented.keys().filter(|n| !real.contains_key(*n)) {
        differences.push(format!("{name} is in the table but not in the workspace"));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn objects_and_housekeeping_sit_below_the_protocol() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let real = cargo_graph(&workspace);
    let odb = &real["refstore-odb"];
    assert!(
        !odb.contains("refstore-refs"),
        "refstore-odb depends on refstore-refs"
    );
    assert!(
        !real["refstore-maint"].contains("refstore-protocol"),
        "refstore-maint depends on refstore-protocol"
    );
    for low in ["refstore-hash", "refstore-refname"] {
        assert!(
            real[low].iter().all(|d| !d.starts_with("refstore-")),
            "{low} depends on other refstore crates: {:?}",
            real[low]
        );
    }
}

/// The crate of shared test set-ups is for tests only: no crate depends on
/// it outside its dev-dependencies, so nothing built for use carries it.
#[test]
fn test_support_is_only_a_dev_dependency() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let real = cargo_graph(&workspace);
    assert!(
        real.contains_key("refstore-testsupport"),
        "refstore-testsupport is not in the workspace"
    );
    let users: Vec<&String> = real
        .iter()
        .filter(|(_, deps)| deps.contains("refstore-testsupport"))
        .map(|(name, _)| name)
        .collect();
    assert!(
        users.is_empty(),
        "normal dependencies on refstore-testsupport: {users:?}"
    );
}

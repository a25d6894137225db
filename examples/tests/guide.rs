//! The guide (`docs/guide.md`) checked against what it describes: its table of handler types
//! against the schema's method tables, its test-agent keywords against the test agent's docs,
//! and its "Your own crate" section built as a crate of its own, outside the workspace, from
//! the guide's blocks alone, with its tests run. (Its Rust blocks are also doctests of this
//! crate.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn guide() -> String {
    std::fs::read_to_string(workspace().join("docs/guide.md")).expect("docs/guide.md")
}

/// The text of the guide's section `title` (up to the next `## `).
fn section(guide: &str, title: &str) -> String {
    let start = guide
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("the guide has no section {title:?}"));
    let rest = &guide[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_owned()
}

/// The rows of the markdown tables in `text`, as their cells (header and rule left out).
fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .skip(1)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn the_guides_table_of_types_is_the_schemas() {
    use sacp::schema::table::AcpSide;
    // The examples turn on `unstable`, so this is the unstable schema's table: the guide's
    // table of stable types and that of its section on the unstable surface, together.
    let sent_by = |receiver: AcpSide| match receiver {
        AcpSide::Agent => Some("client"),
        AcpSide::Client => Some("agent"),
        // `$/cancel_request`, `proxy/*`: no handler takes them.
        AcpSide::Protocol => None,
    };
    let short = |path: &str| path.rsplit("::").next().unwrap_or(path).to_owned();
    let mut schema = BTreeSet::new();
    let requests = sacp::schema::acp::v1::methods::REQUESTS
        .iter()
        .map(|e| (e.params_type, e.method, e.receiver));
    let notifications = sacp::schema::acp::v1::methods::NOTIFICATIONS
        .iter()
        .map(|e| (e.params_type, e.method, e.receiver));
    for (params, method, receiver) in requests.chain(notifications) {
        if let Some(side) = sent_by(receiver) {
            schema.insert((short(params), method.to_owned(), side));
        }
    }
    let guide = guide();
    let rows = [
        table_rows(&section(&guide, "Which type is which method")),
        table_rows(&section(&guide, "The unstable surface")),
    ];
    let guide: BTreeSet<_> = rows
        .into_iter()
        .flatten()
        .map(|row| {
            let cell = |i: usize| row[i].trim_matches('`').to_owned();
            let side = if row[2] == "client" {
                "client"
            } else {
                "agent"
            };
            (cell(0), cell(1), side)
        })
        .collect();
    let missing: Vec<_> = schema.difference(&guide).collect();
    let wrong: Vec<_> = guide.difference(&schema).collect();
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "the guide's table differs from the schema:\n  missing: {missing:?}\n  not in the schema: {wrong:?}"
    );
}

#[test]
fn the_guides_test_agent_keywords_are_its_own() {
    let source = std::fs::read_to_string(workspace().join("examples/src/test_agent/mod.rs"))
        .expect("the test agent's source");
    let docs: String = source
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l).to_owned() + "\n")
        .collect();
    let keywords = |text: &str| -> Vec<Vec<String>> {
        table_rows(text)
            .into_iter()
            .filter(|row| row.len() == 2 && row[0] != "prompt")
            .collect()
    };
    assert_eq!(
        keywords(&section(&guide(), "The test agent")),
        keywords(&docs)
    );
}

/// The blocks of the section "Your own crate", each with the file it is: the first
/// `Cargo.toml` or `src/….rs` named in the paragraph before it. Lines rustdoc hides (`# …`)
/// are left out, as the guide shows them.
fn own_crate_files() -> Vec<(String, String)> {
    let text = section(&guide(), "Your own crate");
    let mut files = Vec::new();
    // The last paragraph before the line being read.
    let mut paragraph = String::new();
    let mut after_blank = false;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with("```") {
            if line.trim().is_empty() {
                after_blank = true;
            } else {
                if after_blank {
                    paragraph.clear();
                    after_blank = false;
                }
                paragraph.push_str(line);
                paragraph.push('\n');
            }
            continue;
        }
        let name = paragraph
            .split('`')
            .skip(1)
            .step_by(2)
            .find(|n| *n == "Cargo.toml" || (n.starts_with("src/") && n.ends_with(".rs")))
            .unwrap_or_else(|| panic!("no file named before the block after:\n{paragraph}"))
            .to_owned();
        let mut body = String::new();
        for line in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            if line == "#" || line.starts_with("# ") {
                continue;
            }
            body.push_str(line);
            body.push('\n');
        }
        files.push((name, body));
        paragraph.clear();
    }
    files
}

#[test]
fn the_guides_own_crate_builds_outside_the_workspace_and_its_tests_pass() {
    let files = own_crate_files();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Cargo.toml", "src/lib.rs", "src/main.rs"]);

    let dir = std::env::temp_dir().join(format!("sacp-guide-crate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let sdk = workspace().join("sacp");
    for (name, body) in &files {
        // The guide's crate takes sacp-sdk from crates.io; this one from the workspace.
        let body = if name == "Cargo.toml" {
            body.lines()
                .map(|l| {
                    if l.starts_with("sacp-sdk = ") {
                        let path = format!("path = {:?}", sdk.display().to_string());
                        l.replace("version = \"0.2\"", &path)
                            .replace("= \"0.2\"", &format!("= {{ {path} }}"))
                    } else {
                        l.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            body.clone()
        };
        std::fs::write(dir.join(name), body).unwrap();
    }
    // The workspace's lock file: the same versions, found offline in the local registry.
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["test", "--offline", "--quiet"])
        .current_dir(&dir)
        // Its own target directory, kept between runs (the workspace's is in use).
        .env("CARGO_TARGET_DIR", workspace().join("target/guide-crate"))
        .env_remove("RUSTFLAGS");
    // The same toolchain as this build, whatever the default one is.
    let rustc = Path::new(&cargo).with_file_name("rustc");
    if rustc.exists() {
        command.env("RUSTC", rustc);
    }
    let output = command.output().expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success() && stdout.contains("test result: ok. 2 passed"),
        "the guide's crate did not build or pass its tests ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

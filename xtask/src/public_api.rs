//! `cargo xtask public-api [--check]`: the public API of each published library, one item a
//! line, in `<crate>/public-api.txt`, so that every change of the surface shows in review.
//!
//! The listing comes from rustdoc's JSON output, read with the `public-api` crate. rustdoc
//! writes JSON only when unstable options are allowed; on the pinned stable toolchain that is
//! `RUSTC_BOOTSTRAP=1` for this one `cargo rustdoc` run (into `target/public-api`, so the
//! ordinary build cache is left alone). The crates are documented with their default features
//! — the API a user gets without opting in to anything — and `sacp-schema` once more with
//! `unstable` (`public-api.unstable.txt`), whose items share one generated file per protocol
//! version with the stable ones and must not drift from what the unstable schemas define.
//!
//! `--check` writes nothing and fails, with the lines that differ, when a listing is stale.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `(package, library name, directory, features, listing)` of each API to list.
const LIBRARIES: &[(&str, &str, &str, &str, &str)] = &[
    ("sacp-sdk", "sacp", "sacp", "", "public-api.txt"),
    (
        "sacp-schema",
        "sacp_schema",
        "sacp-schema",
        "",
        "public-api.txt",
    ),
    (
        "sacp-schema",
        "sacp_schema",
        "sacp-schema",
        "unstable",
        "public-api.unstable.txt",
    ),
    (
        "sacp-chain",
        "sacp_conductor",
        "conductor",
        "",
        "public-api.txt",
    ),
];

/// Lists (or checks) every library's public API.
pub(crate) fn run(root: &Path, check: bool) -> Result<(), String> {
    let target = root.join("target/public-api");
    let mut stale = Vec::new();
    for (package, lib, dir, features, file) in LIBRARIES {
        let listing = listing(root, &target, package, lib, features)?;
        let path = root.join(dir).join(file);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == listing {
            continue;
        }
        if check {
            stale.push(format!(
                "{} is stale:\n{}",
                path.display(),
                difference(&current, &listing)
            ));
        } else {
            std::fs::write(&path, &listing)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the public API changed:\n{}\n  If the change is meant, run `cargo xtask public-api` \
             and commit the listings.",
            stale.join("\n")
        ))
    }
}

/// The public API of `package` (with `features`), one item a line.
fn listing(
    root: &Path,
    target: &Path,
    package: &str,
    lib: &str,
    features: &str,
) -> Result<String, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(root)
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "-p",
            package,
            "--features",
            features,
        ])
        .arg("--target-dir")
        .arg(target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .env("RUSTC_BOOTSTRAP", "1")
        .output()
        .map_err(|e| format!("cannot run cargo rustdoc: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo rustdoc -p {package} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let json: PathBuf = target.join("doc").join(format!("{lib}.json"));
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let mut text = String::new();
    for item in api.items() {
        text.push_str(&item.to_string());
        text.push('\n');
    }
    Ok(text)
}

/// The lines only one of `old` and `new` has: `-` gone, `+` new.
fn difference(old: &str, new: &str) -> String {
    let old_lines: std::collections::BTreeSet<&str> = old.lines().collect();
    let new_lines: std::collections::BTreeSet<&str> = new.lines().collect();
    let gone = old_lines.difference(&new_lines).map(|l| format!("  - {l}"));
    let came = new_lines.difference(&old_lines).map(|l| format!("  + {l}"));
    let all: Vec<String> = gone.chain(came).collect();
    const SHOWN: usize = 60;
    let mut text = all
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    if all.len() > SHOWN {
        text.push_str(&format!("\n  … and {} more lines", all.len() - SHOWN));
    }
    text
}

//! Where the pinned schemas come from, and their checksums.
//!
//! The schemas are read from `$SACP_SCHEMA_DIR` (CI points it at its copy of the pinned
//! schemas). Without it they are fetched from their public sources into
//! `target/schema-cache/` with the ordinary tools (`npm pack` for the ACP schemas, which are
//! published inside the npm package `@agentclientprotocol/sdk`; `curl` for MCP). Either way
//! every file's sha256 must match its pin, or generation stops and says what to do.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// One pinned schema file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pinned {
    /// Path below the schema directory.
    pub(crate) rel_path: &'static str,
    pub(crate) sha256: &'static str,
    source: Source,
}

#[derive(Debug, Clone, Copy)]
enum Source {
    /// A file inside an npm package tarball.
    Npm {
        package: &'static str,
        path_in_package: &'static str,
    },
    /// A file at a URL.
    Url(&'static str),
}

pub(crate) const ACP_V1: Pinned = Pinned {
    rel_path: "acp/v1/schema.json",
    sha256: "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a",
    source: Source::Npm {
        package: "@agentclientprotocol/sdk@2.4.0",
        path_in_package: "schema/v1/schema.json",
    },
};

pub(crate) const ACP_V2: Pinned = Pinned {
    rel_path: "acp/v2/schema.json",
    sha256: "b6c91055df549d6f1db1d76d692d0561dad433e03d8ed114ea9b5baed9da72c5",
    source: Source::Npm {
        package: "@agentclientprotocol/sdk@2.4.0",
        path_in_package: "schema/v2/schema.json",
    },
};

pub(crate) const ACP_V1_UNSTABLE: Pinned = Pinned {
    rel_path: "acp/v1/schema.unstable.json",
    sha256: "ce7881d10c854bcac4f0e7d3a9ce4fb0f612ec0a09e64b572940beec4668c189",
    source: Source::Npm {
        package: "@agentclientprotocol/sdk@2.4.0",
        path_in_package: "schema/v1/schema.unstable.json",
    },
};

pub(crate) const ACP_V2_UNSTABLE: Pinned = Pinned {
    rel_path: "acp/v2/schema.unstable.json",
    sha256: "49e10f8c1935854363ed5b176cc6560d856642ba5020c97d264d34de4b6f1b31",
    source: Source::Npm {
        package: "@agentclientprotocol/sdk@2.4.0",
        path_in_package: "schema/v2/schema.unstable.json",
    },
};

pub(crate) const MCP_2025_11_25: Pinned = Pinned {
    rel_path: "mcp/2025-11-25/schema.json",
    sha256: "268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7",
    source: Source::Url(
        "https://raw.githubusercontent.com/modelcontextprotocol/modelcontextprotocol/main/schema/2025-11-25/schema.json",
    ),
};

/// A schema's text, checked against its pin.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
}

/// Reads `pin` from `schema_dir` (the value of `$SACP_SCHEMA_DIR`), or fetches it into `cache`
/// when there is none.
pub(crate) fn load(
    pin: &Pinned,
    schema_dir: Option<&Path>,
    cache: &Path,
) -> Result<Loaded, String> {
    let path = match schema_dir {
        Some(dir) => {
            let path = dir.join(pin.rel_path);
            if !path.is_file() {
                return Err(format!(
                    "schema {} is missing (SACP_SCHEMA_DIR={}).\n  \
                     Point SACP_SCHEMA_DIR at the pinned schemas, or unset it to \
                     fetch them into {}.",
                    path.display(),
                    dir.display(),
                    cache.display()
                ));
            }
            path
        }
        None => fetch(pin, cache)?,
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let actual = sha256_hex(&bytes);
    if actual != pin.sha256 {
        return Err(format!(
            "schema {} does not match its pin:\n  expected sha256 {}\n  found    sha256 {actual}\n  \
             Use the pinned file ({} in SACP_SCHEMA_DIR); to move to a new schema version, update the \
             pin in xtask/src/sources.rs and regenerate.",
            path.display(),
            pin.sha256,
            pin.rel_path
        ));
    }
    let text =
        String::from_utf8(bytes).map_err(|e| format!("{} is not UTF-8: {e}", path.display()))?;
    Ok(Loaded { path, text })
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn fetch(pin: &Pinned, cache: &Path) -> Result<PathBuf, String> {
    let dest = cache.join(pin.rel_path);
    if dest.is_file() {
        return Ok(dest);
    }
    let dir = dest.parent().unwrap_or(cache);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    eprintln!("fetching {} (SACP_SCHEMA_DIR is not set)", pin.rel_path);
    match pin.source {
        Source::Npm {
            package,
            path_in_package,
        } => {
            let work = cache.join("npm");
            std::fs::create_dir_all(&work)
                .map_err(|e| format!("cannot create {}: {e}", work.display()))?;
            let out = run(
                Command::new("npm")
                    .args(["pack", "--silent", package])
                    .current_dir(&work),
                "npm pack",
            )?;
            let tarball = work.join(out.trim().lines().last().unwrap_or_default());
            run(
                Command::new("tar")
                    .arg("-xzf")
                    .arg(&tarball)
                    .arg("-C")
                    .arg(&work)
                    .arg(format!("package/{path_in_package}")),
                "tar",
            )?;
            std::fs::rename(work.join("package").join(path_in_package), &dest)
                .map_err(|e| format!("cannot move the fetched schema into place: {e}"))?;
        }
        Source::Url(url) => {
            // Into a side file first, so an interrupted download never passes for the schema.
            let part = dest.with_extension("part");
            run(
                Command::new("curl")
                    .args(["-fsSL", "-o"])
                    .arg(&part)
                    .arg(url),
                "curl",
            )?;
            std::fs::rename(&part, &dest)
                .map_err(|e| format!("cannot move the fetched schema into place: {e}"))?;
        }
    }
    Ok(dest)
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| {
        format!("cannot run {what} to fetch the schemas ({e}); set SACP_SCHEMA_DIR to the directory of the pinned schemas instead")
    })?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}\n  Set SACP_SCHEMA_DIR to a directory holding the pinned schemas instead.",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sacp-xtask-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_missing_schema_dir_fails_clearly() {
        let dir = scratch("missing");
        let err = load(&ACP_V1, Some(&dir.join("nope")), &dir).unwrap_err();
        assert!(err.contains("acp/v1/schema.json is missing"), "{err}");
        assert!(
            err.contains("Point SACP_SCHEMA_DIR at the pinned schemas"),
            "{err}"
        );
    }

    #[test]
    fn a_schema_that_does_not_match_its_pin_is_refused() {
        let dir = scratch("pin");
        std::fs::create_dir_all(dir.join("acp/v1")).unwrap();
        std::fs::write(dir.join("acp/v1/schema.json"), "{}").unwrap();
        let err = load(&ACP_V1, Some(&dir), &dir).unwrap_err();
        assert!(
            err.contains("does not match its pin") && err.contains(ACP_V1.sha256),
            "{err}"
        );
        assert!(err.contains(&sha256_hex(b"{}")), "{err}");
    }
}

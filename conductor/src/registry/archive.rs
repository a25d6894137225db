//! Unpacking an agent's archive: `.tar.gz` (`.tgz`) and `.tar` with the `tar` and `flate2`
//! crates, `.zip` with `zip`; both refuse an entry that would land outside the directory.

use std::path::{Component, Path, PathBuf};

/// Unpacks the archive `file` (its kind from its `url`'s end) into `into`.
pub(crate) fn unpack(url: &str, file: &Path, into: &Path) -> Result<(), String> {
    let name = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    std::fs::create_dir_all(into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    let open = || std::fs::File::open(file).map_err(|e| format!("cannot read the download: {e}"));
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let gz = flate2::read::GzDecoder::new(open()?);
        tar::Archive::new(gz)
            .unpack(into)
            .map_err(|e| format!("not a .tar.gz that unpacks: {e}"))
    } else if name.ends_with(".tar") {
        tar::Archive::new(open()?)
            .unpack(into)
            .map_err(|e| format!("not a .tar that unpacks: {e}"))
    } else if name.ends_with(".zip") {
        let mut zip = zip::ZipArchive::new(open()?).map_err(|e| format!("not a .zip: {e}"))?;
        zip.extract(into)
            .map_err(|e| format!("not a .zip that unpacks: {e}"))
    } else {
        Err("an archive that is not .tar.gz, .tgz, .tar or .zip".to_owned())
    }
}

/// The file `cmd` (`./codex-acp`, `bin/agent`) names in the unpacked archive `dir`: it must be
/// there, inside it.
pub(crate) fn command_in(dir: &Path, cmd: &str) -> Result<PathBuf, String> {
    let relative = Path::new(cmd);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(format!("its cmd {cmd:?} is not a path inside the archive"));
    }
    let path = dir.join(relative);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("it holds no {cmd:?}"))
    }
}

/// Makes `path` executable (an archive that did not say so: a `.zip`).
pub(crate) fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let mode = meta.permissions().mode();
    if mode & 0o111 == 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cmd_outside_the_archive_is_refused() {
        let dir = std::env::temp_dir().join(format!("sacp-archive-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/agent"), "").unwrap();
        assert_eq!(
            command_in(&dir, "./bin/agent").unwrap(),
            dir.join("./bin/agent")
        );
        assert!(command_in(&dir, "../agent").unwrap_err().contains("inside"));
        assert!(command_in(&dir, "/bin/sh").unwrap_err().contains("inside"));
        assert!(
            command_in(&dir, "./missing")
                .unwrap_err()
                .contains("holds no")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

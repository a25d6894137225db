//! The registry's cache, in sacp's cache directory (`$XDG_CACHE_HOME/sacp/registry`, else
//! `~/.cache/sacp/registry`; `~/Library/Caches/sacp/registry` on macOS):
//!
//! - `lists/KEY.json` and `lists/KEY.time`: a registry's document as it was last fetched, and
//!   when (seconds since the Unix epoch); `KEY` is the first 16 hex digits of the SHA-256 of
//!   its URL. Used without a request while younger than the refresh period; fetched again
//!   after, and used however old when the fetch fails.
//! - `agents/ID/VERSION/PLATFORM/`: an agent's archive, unpacked, with `.sacp-installed` (the
//!   archive's URL and SHA-256) written last: a directory without it is not used. An archive
//!   is downloaded beside it, checked, unpacked beside it, then moved into place, so that a
//!   conductor killed in the middle leaves nothing that looks installed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::Digest;

use super::{Binary, Error, archive, fetch};

/// The most a registry's document may take.
const LIST_LIMIT: u64 = 16 << 20;
/// The most an archive may take.
const ARCHIVE_LIMIT: u64 = 2 << 30;
/// The file that says an agent's directory is whole.
const INSTALLED: &str = ".sacp-installed";

/// A cache directory.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// sacp's cache directory's `registry/`.
    pub(crate) fn default_dir() -> Result<PathBuf, Error> {
        dirs::cache_dir()
            .map(|dir| dir.join("sacp").join("registry"))
            .ok_or_else(|| {
                Error::io(
                    "no cache directory (no home?) for the registry",
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                )
            })
    }

    pub(crate) fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    /// The document of the registry at `url`: the cached one while younger than `refresh`,
    /// else fetched (and cached); the cached one, however old, when the fetch fails.
    pub(crate) async fn list(&self, url: &str, refresh: Duration) -> Result<String, Error> {
        let lists = self.dir.join("lists");
        let key = hex(&sha2::Sha256::digest(url.as_bytes()))[..16].to_owned();
        let (body, time) = (
            lists.join(format!("{key}.json")),
            lists.join(format!("{key}.time")),
        );
        let cached = std::fs::read_to_string(&body).ok();
        let fetched_at = std::fs::read_to_string(&time)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok());
        let age = fetched_at.map(|at| now().saturating_sub(at));
        if let (Some(text), Some(age)) = (&cached, age)
            && age < refresh.as_secs()
        {
            tracing::debug!(registry = url, age_s = age, "the registry's list, cached");
            return Ok(text.clone());
        }
        let mut fetched = Vec::new();
        match fetch::get_to(url, &mut fetched, LIST_LIMIT).await {
            Ok(_) => {
                let text = String::from_utf8(fetched).map_err(|e| Error::Invalid {
                    registry: url.to_owned(),
                    why: e.to_string(),
                })?;
                // Kept only when it is a document at all; what it holds is checked by the
                // caller.
                if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
                    create_dir(&lists)?;
                    write_atomically(&body, text.as_bytes())?;
                    write_atomically(&time, now().to_string().as_bytes())?;
                }
                Ok(text)
            }
            Err(why) => match cached {
                Some(text) => {
                    tracing::warn!(
                        registry = url,
                        "cannot fetch the registry ({why}): using its list as cached {}",
                        age.map_or("at an unknown time".to_owned(), |a| format!(
                            "{} ago",
                            humantime::format_duration(Duration::from_secs(a))
                        ))
                    );
                    Ok(text)
                }
                None => Err(Error::Unreachable {
                    registry: url.to_owned(),
                    why: format!("{why}, and it was never cached (in {})", lists.display()),
                }),
            },
        }
    }

    /// Where agent `id` `version`'s archive for `platform` is (or would be) unpacked.
    pub(crate) fn agent_dir(&self, id: &str, version: &str, platform: &str) -> PathBuf {
        self.dir
            .join("agents")
            .join(id)
            .join(version)
            .join(platform)
    }

    /// The directory of agent `id` `version` for `platform`, if its archive is unpacked there.
    pub(crate) fn installed(&self, id: &str, version: &str, platform: &str) -> Option<PathBuf> {
        let dir = self.agent_dir(id, version, platform);
        dir.join(INSTALLED).is_file().then_some(dir)
    }

    /// Downloads `binary`'s archive of agent `id` `version` for `platform`, checks it, unpacks
    /// it into the cache: its directory. `registry` names the registry in errors.
    pub(crate) async fn install(
        &self,
        registry: &str,
        id: &str,
        version: &str,
        platform: &str,
        binary: &Binary,
    ) -> Result<PathBuf, Error> {
        let dir = self.agent_dir(id, version, platform);
        let parent = dir
            .parent()
            .expect("an agent's directory has a parent")
            .to_owned();
        create_dir(&parent)?;
        let unique = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
        let download = parent.join(format!(".download-{unique}"));
        let unpacked = parent.join(format!(".unpack-{unique}"));
        let result = self
            .install_via(registry, id, binary, &download, &unpacked, &dir)
            .await;
        let _ = std::fs::remove_file(&download);
        let _ = std::fs::remove_dir_all(&unpacked);
        result
    }

    async fn install_via(
        &self,
        registry: &str,
        id: &str,
        binary: &Binary,
        download: &Path,
        unpacked: &Path,
        dir: &Path,
    ) -> Result<PathBuf, Error> {
        let url = &binary.archive;
        let mut file = std::fs::File::create(download)
            .map_err(|e| Error::io(format!("cannot create {}", download.display()), e))?;
        let mut hashing = Hashing {
            file: &mut file,
            hash: sha2::Sha256::new(),
        };
        tracing::info!(agent = id, archive = %url, "downloading the agent's archive");
        fetch::get_to(url, &mut hashing, ARCHIVE_LIMIT)
            .await
            .map_err(|why| Error::Offline {
                id: id.to_owned(),
                registry: registry.to_owned(),
                url: url.clone(),
                cache: dir.to_owned(),
                why,
            })?;
        let got = hex(&hashing.hash.finalize());
        if let Some(expected) = &binary.sha256
            && !expected.eq_ignore_ascii_case(&got)
        {
            return Err(Error::Checksum {
                id: id.to_owned(),
                url: url.clone(),
                expected: expected.clone(),
                got,
            });
        }
        file.sync_all()
            .map_err(|e| Error::io(format!("cannot write {}", download.display()), e))?;
        drop(file);
        let archive_error = |why: String| Error::Archive {
            id: id.to_owned(),
            url: url.clone(),
            why,
        };
        archive::unpack(url, download, unpacked).map_err(archive_error)?;
        let cmd = archive::command_in(unpacked, &binary.cmd).map_err(archive_error)?;
        archive::make_executable(&cmd).map_err(archive_error)?;
        std::fs::write(unpacked.join(INSTALLED), format!("{url}\n{got}\n"))
            .map_err(|e| Error::io(format!("cannot write in {}", unpacked.display()), e))?;
        match std::fs::rename(unpacked, dir) {
            Ok(()) => {}
            // Installed meanwhile by another conductor: that one is used.
            Err(_) if dir.join(INSTALLED).is_file() => {}
            Err(e) => {
                return Err(Error::io(
                    format!("cannot move the unpacked archive to {}", dir.display()),
                    e,
                ));
            }
        }
        Ok(dir.to_owned())
    }
}

/// A file written with the SHA-256 of what goes in it.
struct Hashing<'a> {
    file: &'a mut std::fs::File,
    hash: sha2::Sha256,
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))
}

/// Writes `path` whole or not at all (a file beside it, renamed).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let beside = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&beside, bytes)
        .and_then(|()| std::fs::rename(&beside, path))
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

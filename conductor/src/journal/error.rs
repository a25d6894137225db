//! What can go wrong with a journal: an enum a caller can match, its cause kept as `source`.

use std::path::PathBuf;

/// A journal's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The PostgreSQL server cannot be reached (the URL without its password).
    #[error("cannot reach the journal's PostgreSQL at {url}: {}", describe(.source))]
    Unreachable {
        url: String,
        #[source]
        source: postgres::Error,
    },
    /// The PostgreSQL server refused or broke a statement.
    #[error("the journal's PostgreSQL: {}", describe(.0))]
    Postgres(#[source] postgres::Error),
    /// The SQLite file could not be opened, read or written.
    #[error("the journal {}: {source}", .path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The store is of a schema this conductor does not know (a newer conductor's).
    #[error("the journal's schema is version {found}; this conductor knows {known}")]
    Schema { found: i64, known: i64 },
    /// A file or thread the journal needs could not be made.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The journal's own work failed (a thread that panicked or was cancelled).
    #[error("the journal's {what} failed")]
    Task { what: &'static str },
}

impl Error {
    /// Whether the write may succeed when tried again on a new connection: the connection or
    /// the server went away, or the store was busy — not a statement the store refused.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Error::Unreachable { .. } => true,
            Error::Postgres(e) => e.is_closed() || e.as_db_error().is_none_or(is_retryable),
            Error::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(
                    rusqlite::ErrorCode::DatabaseBusy
                        | rusqlite::ErrorCode::DatabaseLocked
                        | rusqlite::ErrorCode::SystemIoFailure
                        | rusqlite::ErrorCode::CannotOpen
                )
            ),
            Error::Schema { .. } | Error::Io { .. } | Error::Task { .. } => false,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// What a server says of a statement that may pass when tried again: class 08 (the
/// connection), 40 (a deadlock or a serialization failure, the transaction rolled back) and 57
/// (a server shutting down or restarting: `admin_shutdown`, `cannot_connect_now`).
fn is_retryable(db: &postgres::error::DbError) -> bool {
    let code = db.code().code();
    ["08", "40", "57"]
        .iter()
        .any(|class| code.starts_with(class))
}

/// A PostgreSQL error with what the server said, when it said something.
pub(crate) fn describe(e: &postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => format!("{e}: {} ({})", db.message(), db.code().code()),
        (None, Some(source)) => format!("{e}: {source}"),
        (None, None) => e.to_string(),
    }
}

/// Why a chunk of a session's entries cannot be read back (it is left out of the restore, and
/// the log says why): its lines are not the text or the LZ4 frame a conductor writes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    #[error("are not UTF-8: {0}")]
    Text(#[from] std::string::FromUtf8Error),
    #[error("are not a whole LZ4 frame of UTF-8: {0}")]
    Frame(#[source] std::io::Error),
    #[error("are of type {0}")]
    Type(&'static str),
}

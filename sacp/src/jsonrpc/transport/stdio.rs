//! This process's standard input and output as async byte streams.
//!
//! `tokio::io::stdin()`/`stdout()` hand every read and write to a blocking thread, which costs
//! a thread hand-off per line: fine for a terminal, slow on the hot path of a chain where every
//! component talks over pipes. When stdin or stdout is a pipe or a socket (what a conductor or
//! an editor gives a component), it is registered with tokio's reactor instead, non-blocking;
//! anything else (a terminal, a file) falls back to tokio's blocking-thread versions.
//!
//! The descriptor is duplicated, so fd 0 and fd 1 stay open for the rest of the process; the
//! non-blocking flag, though, is set on the pipe itself, which is why only pipes and sockets
//! take the fast path (an inherited terminal is left alone).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Standard input: a registered pipe or socket when possible, otherwise tokio's `Stdin`.
#[derive(Debug)]
pub struct StdinReader(Input);

#[derive(Debug)]
enum Input {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdin),
}

/// Standard output: a registered pipe or socket when possible, otherwise tokio's `Stdout`.
#[derive(Debug)]
pub struct StdoutWriter(Output);

#[derive(Debug)]
enum Output {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdout),
}

impl StdinReader {
    /// Standard input. Outside a tokio runtime it is always the blocking kind.
    pub fn new() -> StdinReader {
        #[cfg(unix)]
        if let Some(fast) = unix::registered(std::io::stdin()) {
            return StdinReader(match fast {
                unix::Registered::Pipe(fd) => {
                    match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
                        Ok(pipe) => Input::Pipe(pipe),
                        Err(_) => Input::Blocking(tokio::io::stdin()),
                    }
                }
                unix::Registered::Socket(s) => Input::Socket(s),
            });
        }
        StdinReader(Input::Blocking(tokio::io::stdin()))
    }
}

impl Default for StdinReader {
    fn default() -> Self {
        StdinReader::new()
    }
}

impl StdoutWriter {
    /// Standard output. Outside a tokio runtime it is always the blocking kind.
    pub fn new() -> StdoutWriter {
        #[cfg(unix)]
        if let Some(fast) = unix::registered(std::io::stdout()) {
            return StdoutWriter(match fast {
                unix::Registered::Pipe(fd) => {
                    match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
                        Ok(pipe) => Output::Pipe(pipe),
                        Err(_) => Output::Blocking(tokio::io::stdout()),
                    }
                }
                unix::Registered::Socket(s) => Output::Socket(s),
            });
        }
        StdoutWriter(Output::Blocking(tokio::io::stdout()))
    }
}

impl Default for StdoutWriter {
    fn default() -> Self {
        StdoutWriter::new()
    }
}

#[cfg(unix)]
mod unix {
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    pub(super) enum Registered {
        Pipe(OwnedFd),
        Socket(tokio::net::UnixStream),
    }

    /// A duplicate of `stdio`'s descriptor, when it is a pipe or a Unix socket and a runtime
    /// is there to register it with.
    pub(super) fn registered(stdio: impl AsFd) -> Option<Registered> {
        tokio::runtime::Handle::try_current().ok()?;
        let fd = stdio.as_fd().try_clone_to_owned().ok()?;
        let kind = std::fs::File::from(fd.try_clone().ok()?)
            .metadata()
            .ok()?
            .file_type();
        if kind.is_fifo() {
            Some(Registered::Pipe(fd))
        } else if kind.is_socket() {
            let socket = std::os::unix::net::UnixStream::from(fd);
            socket.set_nonblocking(true).ok()?;
            tokio::net::UnixStream::from_std(socket)
                .ok()
                .map(Registered::Socket)
        } else {
            None
        }
    }
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Input::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            #[cfg(unix)]
            Input::Socket(s) => Pin::new(s).poll_read(cx, buf),
            Input::Blocking(b) => Pin::new(b).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_write(cx, buf),
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_write(cx, buf),
            Output::Blocking(b) => Pin::new(b).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_flush(cx),
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_flush(cx),
            Output::Blocking(b) => Pin::new(b).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            // Shutting down the socket's write side would end fd 1 for the whole process
            // (it is the same socket); flushing is all a close needs.
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_flush(cx),
            Output::Blocking(b) => Pin::new(b).poll_shutdown(cx),
        }
    }
}

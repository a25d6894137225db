//! `conductor mcp PORT`: the stdio bridge process an agent starts as an MCP server (spec §4).
//!
//! It connects to the conductor's listener at 127.0.0.1:PORT, sends the secret from
//! `SACP_MCP_BRIDGE_TOKEN` as its first line, then copies bytes both ways: its stdin to the
//! socket, the socket to its stdout. It exits 0 when either side closes; it says why on stderr
//! and exits non-zero when it cannot connect (1), when the conductor refuses the secret or
//! breaks the connection (1), or when it is started without a secret (2).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::ExitCode;

use super::TOKEN_ENV;

/// The subcommand's name.
pub(crate) const SUBCOMMAND: &str = "mcp";

/// Runs the bridge to the conductor's listener on `port`.
pub(crate) fn run(port: u16) -> ExitCode {
    let Some(token) = std::env::var_os(TOKEN_ENV) else {
        eprintln!(
            "conductor mcp: {TOKEN_ENV} is not set: this command is started by the conductor's \
             MCP bridge, which puts the secret there"
        );
        return ExitCode::from(2);
    };
    let mut socket = match TcpStream::connect(("127.0.0.1", port)) {
        Ok(socket) => socket,
        Err(e) => {
            eprintln!(
                "conductor mcp: cannot connect to the conductor's MCP bridge at 127.0.0.1:{port}: {e}"
            );
            return ExitCode::FAILURE;
        }
    };
    let _ = socket.set_nodelay(true);
    let mut hello = token.into_encoded_bytes();
    hello.push(b'\n');
    if let Err(e) = socket.write_all(&hello) {
        eprintln!("conductor mcp: cannot send the secret to 127.0.0.1:{port}: {e}");
        return ExitCode::FAILURE;
    }
    let upstream = match socket.try_clone() {
        Ok(upstream) => upstream,
        Err(e) => {
            eprintln!("conductor mcp: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Stdin to the socket, on a thread of its own; the end of stdin ends the bridge.
    std::thread::spawn(move || {
        let code = copy_stdin(upstream, port);
        std::process::exit(code);
    });
    let code = copy_socket(&mut socket, port);
    ExitCode::from(code)
}

fn copy_stdin(mut socket: TcpStream, port: u16) -> i32 {
    let mut stdin = std::io::stdin().lock();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match stdin.read(&mut buffer) {
            Ok(0) => {
                let _ = socket.shutdown(Shutdown::Write);
                return 0;
            }
            Ok(n) => {
                if let Err(e) = socket.write_all(&buffer[..n]) {
                    return broken(&e, port);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("conductor mcp: cannot read stdin: {e}");
                return 1;
            }
        }
    }
}

fn copy_socket(socket: &mut TcpStream, port: u16) -> u8 {
    let mut stdout = std::io::stdout().lock();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match socket.read(&mut buffer) {
            Ok(0) => return 0,
            Ok(n) => {
                if stdout
                    .write_all(&buffer[..n])
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    // Nobody reads our answers any more: the agent is done with us.
                    return 0;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return u8::try_from(broken(&e, port)).unwrap_or(1),
        }
    }
}

/// The conductor reset the connection: it refused the secret (or ended without a goodbye).
fn broken(e: &std::io::Error, port: u16) -> i32 {
    if matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe
    ) {
        eprintln!(
            "conductor mcp: the conductor at 127.0.0.1:{port} refused the connection: \
             {TOKEN_ENV} does not hold the secret of this MCP server, or its session has ended ({e})"
        );
    } else {
        eprintln!("conductor mcp: the connection to 127.0.0.1:{port} broke: {e}");
    }
    1
}

//! One client connection: requests read one after another (HTTP/1.1
//! keep-alive) under the connection's time limits, each answered by the
//! handler.

use super::handler::{self, State};
use super::head::{self, HeadError};
use super::pace::Paced;
use super::respond::Exchange;
use std::io::{BufReader, BufWriter, ErrorKind};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a connection waiting for its next request looks at the
/// shutdown flag.
const POLL: Duration = Duration::from_millis(100);

/// Serves the requests of `stream` until the client closes it, a request
/// asks to close, a time limit is hit, or the server shuts down.
pub(super) fn serve(state: &State, stream: TcpStream, shutdown: &AtomicBool) {
    let client = stream.peer_addr().ok();
    let timeout = state.options.timeout;
    // Protocol responses are flushed at points the client waits on.
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::with_capacity(64 << 10, Paced::reader(stream, timeout));
    let mut output = BufWriter::with_capacity(64 << 10, Paced::writer(write_half, timeout));
    loop {
        if input.buffer().is_empty()
            && !wait_for_request(input.get_ref().stream(), timeout, shutdown)
        {
            break;
        }
        input.get_mut().restart();
        output.get_mut().restart();
        let started = Instant::now();
        // A head still arriving when the server shuts down is given up
        // on: a slow client must not hold up the exit for `timeout`.
        input.get_mut().abandon_when(Some(shutdown));
        let head = head::read(&mut input);
        input.get_mut().abandon_when(None);
        let head = match head {
            Ok(head) => head,
            Err(HeadError::Closed) => break,
            Err(e) => {
                let (status, message) = match &e {
                    HeadError::TooLarge => (431, "request head too large".to_owned()),
                    HeadError::Malformed(what) => (400, format!("malformed request: {what}")),
                    HeadError::Io(e) if e.kind() == ErrorKind::TimedOut => (408, e.to_string()),
                    HeadError::Io(_) | HeadError::Closed => break,
                };
                let mut exchange = Exchange::without_head(&mut output);
                let _ = exchange.text(status, &message, &[]);
                handler::log(client, "-", "-", status, None, exchange.sent, started);
                break;
            }
        };
        let reusable = handler::handle(state, &head, client, &mut input, &mut output);
        if !reusable || shutdown.load(Ordering::Relaxed) {
            break;
        }
    }
    // Whatever is still buffered goes out before the sending side closes.
    drop(output);
    linger(input.get_ref().stream());
}

/// How long a closing connection keeps reading what the client still
/// sends.
const LINGER: Duration = Duration::from_millis(500);

/// Closes the connection so that the client reads the last answer: a
/// socket closed with unread input resets the connection, and the reset
/// can destroy the answer before the client reads it (a 408 or 413 sent
/// while the client is still sending). So the sending side is closed
/// first, and input is read and dropped for a moment before the close.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + LINGER;
    let mut sink = [0u8; 8192];
    let mut reader = stream;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match std::io::Read::read(&mut reader, &mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// Waits until the next request starts arriving. False if the client
/// closed the connection, stayed idle for `timeout`, or the server is
/// shutting down.
fn wait_for_request(stream: &TcpStream, timeout: Duration, shutdown: &AtomicBool) -> bool {
    let idle_since = Instant::now();
    if stream.set_read_timeout(Some(POLL)).is_err() {
        return false;
    }
    loop {
        match stream.peek(&mut [0u8; 1]) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
        if shutdown.load(Ordering::Relaxed) || idle_since.elapsed() >= timeout {
            return false;
        }
    }
}

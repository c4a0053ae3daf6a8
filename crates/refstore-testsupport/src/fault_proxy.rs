//! A TCP proxy that plays network faults for tests: it listens on a
//! loopback port and forwards every connection to a target, in one of
//! three modes switched while it runs ([`FaultProxy::set`]):
//!
//! - [`Mode::Pass`]: bytes flow both ways.
//! - [`Mode::Hold`]: a partition that drops nothing: connections (open or
//!   new) stay open, and bytes sent either way are held, not delivered,
//!   until the mode changes (a new connection reaches the target only
//!   then). Both ends see a peer that went silent, as when packets are
//!   lost and TCP keeps retransmitting.
//! - [`Mode::Reset`]: every open connection is closed, and new ones are
//!   closed as soon as they are accepted.
//!
//! Going from `Hold` back to `Pass` delivers what was held, as TCP does
//! once a partition heals before the connection times out.
//!
//! std threads only: one accepting thread, and two forwarding threads per
//! connection.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// What the proxy does with connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward both ways.
    Pass,
    /// Keep connections open, forward nothing.
    Hold,
    /// Close connections.
    Reset,
}

/// A running proxy; stopped (every connection closed) when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    target: SocketAddr,
    mode: Mutex<Mode>,
    changed: Condvar,
    stopped: AtomicBool,
    /// Both sockets of every open connection, by a number of their own,
    /// to close them on `Reset` and when the proxy stops.
    open: Mutex<HashMap<u64, TcpStream>>,
    next: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .field("target", &self.shared.target)
            .field("mode", &self.mode())
            .finish()
    }
}

impl FaultProxy {
    /// Starts a proxy to `target` on a free loopback port, in
    /// [`Mode::Pass`].
    pub fn start(target: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port for the proxy");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            target,
            mode: Mutex::new(Mode::Pass),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
            open: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
        });
        let accepting = shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || accept(&listener, &accepting))
            .expect("a thread for the proxy");
        FaultProxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// A proxy to `127.0.0.1:port`.
    pub fn to_port(port: u16) -> FaultProxy {
        FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The mode now.
    pub fn mode(&self) -> Mode {
        *lock(&self.shared.mode)
    }

    /// Switches to `mode`: takes effect at once on every connection.
    pub fn set(&self, mode: Mode) {
        *lock(&self.shared.mode) = mode;
        if mode == Mode::Reset {
            self.shared.close_all();
        }
        self.shared.changed.notify_all();
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        self.shared.close_all();
        // Wakes the accepting thread, which then sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl Shared {
    fn close_all(&self) {
        for (_, stream) in lock(&self.open).drain() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Registers a connection's socket for closing: its number, or `None`
    /// (and the socket closed) if the proxy reset or stopped meanwhile.
    fn register(&self, stream: &TcpStream) -> Option<u64> {
        let copy = stream.try_clone().ok()?;
        let mut open = lock(&self.open);
        if self.stopped.load(Ordering::SeqCst) || *lock(&self.mode) == Mode::Reset {
            let _ = stream.shutdown(Shutdown::Both);
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        open.insert(id, copy);
        Some(id)
    }

    /// Forgets sockets that are closed.
    fn forget(&self, ids: impl IntoIterator<Item = u64>) {
        let mut open = lock(&self.open);
        for id in ids {
            open.remove(&id);
        }
    }

    /// Waits while the proxy holds; true if bytes may flow (`Pass`), false
    /// if the connection is to close.
    fn wait_to_pass(&self) -> bool {
        let mut mode = lock(&self.mode);
        loop {
            if self.stopped.load(Ordering::SeqCst) {
                return false;
            }
            match *mode {
                Mode::Pass => return true,
                Mode::Reset => return false,
                Mode::Hold => {
                    mode = self.changed.wait(mode).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Some(id) = shared.register(&client) else {
            continue;
        };
        let shared = shared.clone();
        let _ = std::thread::Builder::new()
            .name("fault-proxy-conn".into())
            .spawn(move || {
                let server = connect(client, &shared);
                shared.forget([Some(id), server].into_iter().flatten());
            });
    }
}

/// Reaches the target for `client` once the proxy passes, then forwards
/// until both directions end; the number of the target's socket, if it
/// was registered.
fn connect(client: TcpStream, shared: &Arc<Shared>) -> Option<u64> {
    if !shared.wait_to_pass() {
        let _ = client.shutdown(Shutdown::Both);
        return None;
    }
    let Ok(server) = TcpStream::connect(shared.target) else {
        let _ = client.shutdown(Shutdown::Both);
        return None;
    };
    let Some(id) = shared.register(&server) else {
        let _ = client.shutdown(Shutdown::Both);
        return None;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client_in), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
        return Some(id);
    };
    let upstream = shared.clone();
    let forward_up = std::thread::Builder::new()
        .name("fault-proxy-up".into())
        .spawn(move || forward(client_in, server, &upstream));
    forward(server_in, client, shared);
    if let Ok(thread) = forward_up {
        let _ = thread.join();
    }
    Some(id)
}

/// Copies `from` to `to`, each chunk waiting while the proxy holds; the
/// end of `from` is passed on as the end of `to`.
fn forward(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !shared.wait_to_pass() || to.write_all(&buffer[..n]).is_err() {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            return;
        }
    }
    if shared.wait_to_pass() {
        let _ = to.shutdown(Shutdown::Write);
    } else {
        let _ = to.shutdown(Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    /// An echo server on a free port.
    fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut copy = stream.try_clone().unwrap();
                    let _ = std::io::copy(&mut stream, &mut copy);
                });
            }
        });
        addr
    }

    fn exchange(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        stream.write_all(bytes)?;
        let mut answer = vec![0; bytes.len()];
        stream.read_exact(&mut answer)?;
        Ok(answer)
    }

    #[test]
    fn passes_holds_and_resets_connections() {
        let proxy = FaultProxy::start(echo());
        let mut stream = TcpStream::connect(proxy.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        // Generated payloads of several sizes, some over one buffer.
        for size in [1usize, 100, 70_000, 200_000] {
            let payload: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            assert_eq!(exchange(&mut stream, &payload).unwrap(), payload);
        }

        // Held: the open connection and a new one get nothing back...
        proxy.set(Mode::Hold);
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let held = exchange(&mut stream, b"held").unwrap_err();
        assert!(
            matches!(held.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{held}"
        );
        let mut late = TcpStream::connect(proxy.addr()).unwrap();
        late.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(exchange(&mut late, b"late").is_err());

        // ...until it passes again: what was held arrives.
        proxy.set(Mode::Pass);
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut answer = [0u8; 4];
        stream.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"held");
        late.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        late.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"late");

        // Reset: open connections end, new ones are closed at once.
        proxy.set(Mode::Reset);
        let mut rest = Vec::new();
        let ended = stream.read_to_end(&mut rest);
        assert!(matches!(ended, Ok(0)) || ended.is_err(), "{ended:?}");
        let mut refused = TcpStream::connect(proxy.addr()).unwrap();
        refused
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert!(exchange(&mut refused, b"x").is_err());

        proxy.set(Mode::Pass);
        let mut again = TcpStream::connect(proxy.addr()).unwrap();
        again
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(exchange(&mut again, b"again").unwrap(), b"again");
        assert_eq!(proxy.mode(), Mode::Pass);
    }
}

//! Time limits on a client's socket, so slow or silent clients are dropped.
//!
//! A client may keep the server waiting on its socket for `timeout`, plus
//! one second for every [`MIN_RATE`] bytes it has moved so far. Only time
//! spent blocked on the client counts, not the time the server takes to
//! compute between reads or writes. A real client on any usable network
//! stays far ahead of that allowance; a client that sends (or reads) a byte
//! now and then falls behind it after about `timeout` whatever the
//! per-byte gaps, which a plain idle timeout per `read` would not catch.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a read that may be abandoned looks at its flag.
const POLL: Duration = Duration::from_millis(100);

/// The slowest transfer rate a client may keep up for long, in bytes per
/// second.
pub const MIN_RATE: u64 = 64 << 10;

/// One direction of a connection, with its allowance.
pub struct Paced<'a> {
    stream: TcpStream,
    /// While set, reads give up (as too slow) once this flag is set.
    abandon: Option<&'a AtomicBool>,
    timeout: Duration,
    waited: Duration,
    moved: u64,
    writing: bool,
}

impl<'a> Paced<'a> {
    /// The reading side of `stream`.
    pub fn reader(stream: TcpStream, timeout: Duration) -> Paced<'a> {
        Paced::new(stream, timeout, false)
    }

    /// The writing side of `stream`.
    pub fn writer(stream: TcpStream, timeout: Duration) -> Paced<'a> {
        Paced::new(stream, timeout, true)
    }

    fn new(stream: TcpStream, timeout: Duration, writing: bool) -> Paced<'a> {
        Paced {
            stream,
            abandon: None,
            timeout,
            waited: Duration::ZERO,
            moved: 0,
            writing,
        }
    }

    /// Starts a new allowance (a new request or response).
    pub fn restart(&mut self) {
        self.waited = Duration::ZERO;
        self.moved = 0;
    }

    /// Makes reads give up once `flag` is set (`None`: never). A server
    /// that shuts down abandons requests that have not fully arrived.
    pub fn abandon_when(&mut self, flag: Option<&'a AtomicBool>) {
        self.abandon = flag;
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// How long the next transfer may block, or an error once the
    /// allowance is used up.
    fn remaining(&self) -> io::Result<Duration> {
        let allowed = self.timeout + Duration::from_secs_f64(self.moved as f64 / MIN_RATE as f64);
        let left = allowed.saturating_sub(self.waited);
        if left.is_zero() {
            Err(too_slow(self.writing))
        } else {
            Ok(left)
        }
    }

    fn account(&mut self, since: Instant, result: io::Result<usize>) -> io::Result<usize> {
        self.waited += since.elapsed();
        match result {
            Ok(n) => {
                self.moved += n as u64;
                Ok(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(too_slow(self.writing))
            }
            Err(e) => Err(e),
        }
    }
}

/// The error a transfer that ran out of time fails with.
fn too_slow(writing: bool) -> io::Error {
    let what = if writing {
        "the client did not read the response in time"
    } else {
        "the client did not send its request in time"
    };
    io::Error::new(io::ErrorKind::TimedOut, what)
}

impl Read for Paced<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut left = self.remaining()?;
            if let Some(flag) = self.abandon {
                if flag.load(Ordering::Relaxed) {
                    return Err(too_slow(false));
                }
                left = left.min(POLL);
            }
            self.stream.set_read_timeout(Some(left))?;
            let since = Instant::now();
            let result = self.stream.read(buf);
            match self.account(since, result) {
                // A slice of the wait ran out, not the allowance.
                Err(e) if e.kind() == io::ErrorKind::TimedOut && self.abandon.is_some() => {
                    self.remaining()?;
                }
                other => return other,
            }
        }
    }
}

impl Write for Paced<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.remaining()?;
        self.stream.set_write_timeout(Some(left))?;
        let since = Instant::now();
        let result = self.stream.write(buf);
        self.account(since, result)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    #[test]
    fn a_silent_client_times_out() {
        let (_client, server) = pair();
        let mut paced = Paced::reader(server, Duration::from_millis(200));
        let started = Instant::now();
        let err = paced.read(&mut [0u8; 16]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_trickle_runs_out_of_allowance_though_each_byte_is_quick() {
        let (mut client, server) = pair();
        let mut paced = Paced::reader(server, Duration::from_millis(300));
        let trickle = std::thread::spawn(move || {
            for _ in 0..40 {
                if client.write_all(b"x").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let started = Instant::now();
        let mut received = 0;
        let err = loop {
            match paced.read(&mut [0u8; 16]) {
                Ok(0) => panic!("end of stream before the allowance ran out"),
                Ok(n) => received += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(received > 3, "{received}");
        assert!(started.elapsed() < Duration::from_millis(700));
        drop(paced);
        trickle.join().unwrap();
    }

    #[test]
    fn time_the_server_spends_between_reads_does_not_count() {
        let (mut client, server) = pair();
        let mut paced = Paced::reader(server, Duration::from_millis(200));
        client.write_all(b"abc").unwrap();
        for _ in 0..3 {
            paced.read_exact(&mut [0u8; 1]).unwrap();
            std::thread::sleep(Duration::from_millis(150));
        }
        client.write_all(b"d").unwrap();
        paced.read_exact(&mut [0u8; 1]).unwrap();
    }

    #[test]
    fn an_abandoned_read_gives_up_soon_after_the_flag() {
        let (_client, server) = pair();
        let flag = AtomicBool::new(false);
        let mut paced = Paced::reader(server, Duration::from_secs(30));
        paced.abandon_when(Some(&flag));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                flag.store(true, Ordering::Relaxed);
            });
            let started = Instant::now();
            let err = paced.read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::TimedOut);
            assert!(started.elapsed() < Duration::from_secs(5));
        });
    }

    #[test]
    fn a_fast_client_is_never_cut_off() {
        let (mut client, server) = pair();
        let mut paced = Paced::reader(server, Duration::from_millis(200));
        let sender = std::thread::spawn(move || {
            let block = vec![7u8; 64 << 10];
            for _ in 0..64 {
                client.write_all(&block).unwrap();
            }
        });
        let mut sink = Vec::new();
        paced.read_to_end(&mut sink).unwrap();
        assert_eq!(sink.len(), 64 * (64 << 10));
        sender.join().unwrap();
    }
}

//! The blocking streams a service runs on, over an SSH channel: git's
//! services are synchronous code on a blocking thread, the channel lives
//! in the async session.
//!
//! Input arrives as chunks on a bounded queue the session fills, so a
//! client cannot send faster than the service reads (the session waits,
//! and with it the client's TCP stream). Output goes out through the
//! channel's write half, which waits for the client's window: a client
//! that stops reading stops the service instead of filling memory. A
//! client that makes no progress for `timeout` in either direction fails
//! the service with a timeout, so it cannot hold a worker forever.

use bytes::Bytes;
use russh::server::Msg;
use russh::ChannelWriteHalf;
use std::io::{Error, ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::mpsc::Receiver;

/// The largest piece written at once, so the timeout measures progress
/// rather than the time a large write takes.
const PIECE: usize = 32 << 10;

/// What the client sends, as a blocking reader.
pub struct ChannelInput {
    runtime: Handle,
    chunks: Receiver<Bytes>,
    current: Bytes,
    timeout: Duration,
    /// Bytes read so far.
    pub received: u64,
    /// The client stopped sending for longer than the timeout.
    pub timed_out: bool,
}

impl ChannelInput {
    /// Reads the chunks of `chunks` (closed at the client's EOF).
    pub fn new(runtime: Handle, chunks: Receiver<Bytes>, timeout: Duration) -> ChannelInput {
        ChannelInput {
            runtime,
            chunks,
            current: Bytes::new(),
            timeout,
            received: 0,
            timed_out: false,
        }
    }
}

impl Read for ChannelInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            let next = self
                .runtime
                .block_on(tokio::time::timeout(self.timeout, self.chunks.recv()));
            match next {
                Ok(Some(chunk)) => self.current = chunk,
                Ok(None) => return Ok(0),
                Err(_) => {
                    self.timed_out = true;
                    return Err(timed_out("sending"));
                }
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        self.received += n as u64;
        Ok(n)
    }
}

/// What the service answers, as a blocking writer to the channel's data
/// stream.
pub struct ChannelOutput {
    runtime: Handle,
    channel: Arc<ChannelWriteHalf<Msg>>,
    timeout: Duration,
    /// Bytes written so far.
    pub sent: u64,
    /// The client stopped reading for longer than the timeout.
    pub timed_out: bool,
}

impl ChannelOutput {
    /// Writes to `channel`.
    pub fn new(runtime: Handle, channel: Arc<ChannelWriteHalf<Msg>>, timeout: Duration) -> Self {
        ChannelOutput {
            runtime,
            channel,
            timeout,
            sent: 0,
            timed_out: false,
        }
    }
}

impl Write for ChannelOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The protocol code buffers its packets, so writes come in useful
        // sizes; each becomes one or more channel packets at once.
        for piece in buf.chunks(PIECE) {
            let sending = self.channel.data_bytes(Bytes::copy_from_slice(piece));
            match self
                .runtime
                .block_on(tokio::time::timeout(self.timeout, sending))
            {
                Ok(Ok(())) => self.sent += piece.len() as u64,
                Ok(Err(_)) => {
                    return Err(Error::new(
                        ErrorKind::BrokenPipe,
                        "the client closed the connection",
                    ))
                }
                Err(_) => {
                    self.timed_out = true;
                    return Err(timed_out("reading"));
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn timed_out(doing: &str) -> Error {
    Error::new(
        ErrorKind::TimedOut,
        format!("timeout reached: the client stopped {doing}"),
    )
}

//! Between the async connection and the blocking git services: the
//! request body as a blocking `Read`, the service's output as a blocking
//! `Write`, each through a bounded channel so neither side holds more than
//! a few buffers, whatever the size of a pack.

use hyper::body::Bytes;
use std::io::{self, Read, Write};
use tokio::sync::mpsc;

/// Pieces in flight on a channel.
pub const DEPTH: usize = 2;

/// The size of a piece of output: each is one chunk of the response.
const PIECE: usize = 32 << 10;

/// A request body arriving piece by piece.
pub struct ChannelReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
    failed: Option<io::Error>,
}

impl ChannelReader {
    /// Reads what `rx` brings; the end of the channel is the end of the
    /// body.
    pub fn new(rx: mpsc::Receiver<io::Result<Bytes>>) -> Self {
        ChannelReader {
            rx,
            current: Bytes::new(),
            failed: None,
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.current.is_empty() {
            if let Some(e) = &self.failed {
                return Err(io::Error::new(e.kind(), e.to_string()));
            }
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Ok(piece)) => self.current = piece,
                Some(Err(e)) => self.failed = Some(e),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// A response body written piece by piece.
pub struct ChannelWriter {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buffer: Vec<u8>,
    /// Whether a piece went out already.
    started: bool,
}

impl ChannelWriter {
    /// Sends what is written to `tx`.
    pub fn new(tx: mpsc::Sender<io::Result<Bytes>>) -> Self {
        ChannelWriter {
            tx,
            buffer: Vec::with_capacity(PIECE),
            started: false,
        }
    }

    /// Ends the body with an error. If nothing went out yet, what was
    /// written is dropped and the error comes first on the channel, so
    /// the server can still answer with an error status and `message`
    /// (see [`first_piece`]); else as [`fail`](Self::fail).
    pub fn refuse(mut self, message: String) {
        if !self.started {
            self.buffer.clear();
        }
        self.fail(message);
    }

    /// Ends the body with an error, so the client sees it cut short;
    /// what was written before goes out first (a service may have told
    /// the client why, as git's `ERR` line).
    pub fn fail(mut self, message: String) {
        if self.send().is_ok() {
            let _ = self.tx.blocking_send(Err(io::Error::other(message)));
        }
    }

    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        // A full buffer is handed over as it is; a short one (a flush in
        // the middle of the protocol) is copied, so that a few bytes in
        // flight do not hold a whole buffer each.
        let piece = if self.buffer.len() == PIECE {
            Bytes::from(std::mem::replace(
                &mut self.buffer,
                Vec::with_capacity(PIECE),
            ))
        } else {
            let piece = Bytes::copy_from_slice(&self.buffer);
            self.buffer.clear();
            piece
        };
        self.started = true;
        self.tx.blocking_send(Ok(piece)).map_err(|_| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the client went away before the response ended",
            )
        })
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(PIECE - self.buffer.len());
        self.buffer.extend_from_slice(&buf[..n]);
        if self.buffer.len() == PIECE {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// How a body sent through a channel starts.
pub enum Start {
    /// With this piece; the rest follows on the channel.
    Piece(Bytes),
    /// With an error, before any byte: the service refused.
    Refused(io::Error),
    /// Empty.
    Empty,
}

/// Waits for the first item of a body, so that a service that fails
/// before writing anything ([`ChannelWriter::refuse`]) can be answered
/// with an error status instead of a body cut short.
pub async fn first_piece(rx: &mut mpsc::Receiver<io::Result<Bytes>>) -> Start {
    match rx.recv().await {
        Some(Ok(piece)) => Start::Piece(piece),
        Some(Err(e)) => Start::Refused(e),
        None => Start::Empty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_before_the_first_piece_comes_alone() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // Written but not sent: dropped, the error comes first.
        let (tx, mut rx) = mpsc::channel(DEPTH);
        let mut out = ChannelWriter::new(tx);
        out.write_all(b"0000").unwrap();
        out.refuse("cannot read the refs".into());
        match runtime.block_on(first_piece(&mut rx)) {
            Start::Refused(e) => assert_eq!(e.to_string(), "cannot read the refs"),
            _ => panic!("not refused"),
        }
        // Sent already: the body goes on, then breaks.
        let (tx, mut rx) = mpsc::channel(DEPTH);
        let sender = std::thread::spawn(move || {
            let mut out = ChannelWriter::new(tx);
            out.write_all(b"0000").unwrap();
            out.flush().unwrap();
            out.refuse("late".into());
        });
        match runtime.block_on(first_piece(&mut rx)) {
            Start::Piece(piece) => assert_eq!(&piece[..], b"0000"),
            _ => panic!("no first piece"),
        }
        let rest = runtime.block_on(rx.recv());
        assert_eq!(rest.unwrap().unwrap_err().to_string(), "late");
        sender.join().unwrap();
    }

    #[test]
    fn pieces_come_out_as_they_went_in_and_errors_stay() {
        let (tx, rx) = mpsc::channel(DEPTH);
        let sender = std::thread::spawn(move || {
            let mut out = ChannelWriter::new(tx);
            for i in 0..200u32 {
                out.write_all(&i.to_le_bytes().repeat(100)).unwrap();
            }
            out.write_all(b"last words").unwrap();
            out.fail("broken".into());
        });
        let mut input = ChannelReader::new(rx);
        let mut got = Vec::new();
        let err = input.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.to_string(), "broken");
        let mut expected: Vec<u8> = (0..200u32)
            .flat_map(|i| i.to_le_bytes().repeat(100))
            .collect();
        expected.extend_from_slice(b"last words");
        assert_eq!(got, expected);
        assert!(input.read(&mut [0u8; 4]).is_err());
        sender.join().unwrap();
    }

    #[test]
    fn a_writer_whose_reader_is_gone_fails() {
        let (tx, rx) = mpsc::channel(DEPTH);
        drop(rx);
        let mut out = ChannelWriter::new(tx);
        out.write_all(b"x").unwrap();
        assert_eq!(out.flush().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }
}

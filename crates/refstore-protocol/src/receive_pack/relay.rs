//! Messages for the pushing user, sent while the push is served: on
//! side-band 2 when side-band-64k was negotiated (git's clients print them
//! after `remote: `), else on the server's standard error, as git's
//! receive-pack does. Hook output is relayed as it arrives, so a slow hook
//! shows its progress; messages of refstore's own are sent just before the
//! next hook runs or with the status report, in the order they were made.

use super::ReceivePackError;
use crate::pkt_line::sideband::{SidebandMode, SidebandWriter};
use crate::pkt_line::PacketWriter;
use std::io::Write;

/// The channel to the user.
pub(crate) struct Relay<'a, W: Write> {
    out: &'a mut PacketWriter<W>,
    side_band: bool,
}

impl<'a, W: Write> Relay<'a, W> {
    /// A relay on `out`; `side_band` if the client negotiated side-band-64k.
    pub fn new(out: &'a mut PacketWriter<W>, side_band: bool) -> Self {
        Relay { out, side_band }
    }

    /// The packet writer, for the status report.
    pub fn packets(&mut self) -> &mut PacketWriter<W> {
        self.out
    }

    /// Whether messages go on side-band 2.
    pub fn side_band(&self) -> bool {
        self.side_band
    }

    /// Sends `messages` (each one line) and empties the list. They are
    /// buffered with the next packets, not flushed on their own.
    pub fn messages(&mut self, messages: &mut Vec<String>) -> Result<(), ReceivePackError> {
        for message in messages.drain(..) {
            if self.side_band {
                let mut band = SidebandWriter::new(self.out, SidebandMode::SideBand64k);
                band.write_progress(format!("{message}\n").as_bytes())?;
            } else {
                eprintln!("{message}");
            }
        }
        Ok(())
    }

    /// Sends output of a hook as it came, at once.
    pub fn output(&mut self, bytes: &[u8]) -> Result<(), ReceivePackError> {
        if self.side_band {
            let mut band = SidebandWriter::new(self.out, SidebandMode::SideBand64k);
            band.write_progress(bytes)?;
            self.out.flush_buffered()?;
        } else {
            let mut stderr = std::io::stderr().lock();
            // The user's channel is gone only if the server's stderr is;
            // the push goes on.
            let _ = stderr.write_all(bytes);
            let _ = stderr.flush();
        }
        Ok(())
    }
}

//! The matrix of the interop suite: every operation by every client over
//! every transport, judged against refstore and, where it does not pass,
//! against git's own server, so that what a client cannot do is told
//! apart from what refstore gets wrong.

use super::clients::Client;
use super::fixtures::Fixtures;
use super::ops::{Ctx, Failure, Op};
use super::servers::{Servers, Transport};
use std::path::Path;

/// The verdict of one cell.
#[derive(Debug, Clone)]
pub enum Cell {
    Pass,
    /// Failed against refstore, passed against git's server (or there was
    /// no control to ask): refstore's fault.
    Fail(String),
    /// Failed against refstore and against git's server alike: the client
    /// cannot (refstore's and the control's reasons).
    Cannot(String),
    /// Means nothing for this transport.
    NotApplicable,
    /// A failure of refstore known and being fixed elsewhere.
    ExpectedFail(String),
    /// Marked as an expected failure, yet it passed.
    UnexpectedPass(String),
}

impl Cell {
    pub fn short(&self) -> &'static str {
        match self {
            Cell::Pass => "pass",
            Cell::Fail(_) => "FAIL",
            Cell::Cannot(_) => "client cannot",
            Cell::NotApplicable => "-",
            Cell::ExpectedFail(_) => "xfail",
            Cell::UnexpectedPass(_) => "XPASS",
        }
    }

    /// Fails the suite.
    pub fn is_failure(&self) -> bool {
        matches!(self, Cell::Fail(_) | Cell::UnexpectedPass(_))
    }
}

fn describe(f: &Failure) -> String {
    let text = match f {
        Failure::Failed(why) => why.clone(),
        Failure::Unsupported(why) => format!("unsupported: {why}"),
    };
    let text = text.replace('\n', " | ");
    if text.len() > 400 {
        let mut end = 400;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &text[..end])
    } else {
        text
    }
}

/// Known refstore failures: (client, operation, what is wrong). A cell
/// listed here that fails is `xfail`, one that passes fails the suite
/// so that the entry goes once the fix is in.
pub const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[];

/// Runs `op` by `client` over `transport` against refstore, and against
/// git's server if it did not pass.
pub fn judge(
    home: &Path,
    servers: &Servers,
    fixtures: &Fixtures,
    client: &Client,
    transport: Transport,
    (index, op): (usize, &Op),
) -> Cell {
    if !(op.applies)(transport) {
        return Cell::NotApplicable;
    }
    let ctx = |control: bool| Ctx {
        home,
        client,
        servers,
        fixtures,
        transport,
        control,
        label: format!(
            "{}-{}-{index:02}-{}",
            client.name,
            transport.name(),
            if control { "git" } else { "refstore" }
        ),
    };
    let expected = EXPECTED_FAILURES
        .iter()
        .find(|(c, o, _)| *c == client.name && *o == op.name)
        .map(|(_, _, why)| *why);
    let ours = (op.run)(&ctx(false));
    let Err(ours) = ours else {
        return match expected {
            Some(why) => Cell::UnexpectedPass(format!(
                "passes now; remove its EXPECTED_FAILURES entry ({why})"
            )),
            None => Cell::Pass,
        };
    };
    let ours = describe(&ours);
    if let Some(why) = expected {
        return Cell::ExpectedFail(format!("{why}: {ours}"));
    }
    match (op.run)(&ctx(true)) {
        Ok(()) => Cell::Fail(format!("{ours} (git's server: pass)")),
        Err(theirs) => {
            let theirs = describe(&theirs);
            if theirs.starts_with("no control server") {
                Cell::Fail(format!("{ours} ({theirs})"))
            } else {
                Cell::Cannot(format!("refstore: {ours}; git's server: {theirs}"))
            }
        }
    }
}

/// The matrix as text: one table per transport (operations down, clients
/// across), then every cell that did not pass with its reason.
pub fn render(ops: &[Op], clients: &[&str], cells: &[(String, Transport, usize, Cell)]) -> String {
    let mut out = String::new();
    let width = ops.iter().map(|o| o.name.len()).max().unwrap_or(0) + 2;
    let col = 15;
    for transport in Transport::ALL {
        out.push_str(&format!("\n{:width$}", format!("[{}]", transport.name())));
        for c in clients {
            out.push_str(&format!("{c:col$}"));
        }
        out.push('\n');
        for (i, op) in ops.iter().enumerate() {
            out.push_str(&format!("{:width$}", op.name));
            for c in clients {
                let cell = cells
                    .iter()
                    .find(|(cn, t, oi, _)| cn == c && *t == transport && *oi == i)
                    .map_or("missing", |(_, _, _, cell)| cell.short());
                out.push_str(&format!("{cell:col$}"));
            }
            out.push('\n');
        }
    }
    out.push('\n');
    for (client, transport, i, cell) in cells {
        let why = match cell {
            Cell::Pass | Cell::NotApplicable => continue,
            Cell::Fail(w) | Cell::Cannot(w) | Cell::ExpectedFail(w) | Cell::UnexpectedPass(w) => w,
        };
        out.push_str(&format!(
            "{} {client} {}/{}: {why}\n",
            cell.short(),
            transport.name(),
            ops[*i].name
        ));
    }
    out
}

//! A server run inside the test process, reached by the real git client.
//!
//! git starts its transport's server as a command (`git clone
//! --upload-pack=<command>`, `git push --receive-pack=<command>`), and
//! talks to it over that command's standard input and output. A [`Relay`]
//! gives git such a command: a small Python program that connects to a
//! Unix socket of the test process, says how it was started (its
//! arguments, `GIT_PROTOCOL` and working directory), and then carries
//! git's bytes to the test and the test's answer back. The test serves the
//! call in-process with a [`Handler`]: the protocol code under test reads
//! and writes the connection as it would a process's standard streams.
//!
//! What the handler returns ends the command as the `refstore` executable
//! ends: `Ok` exits 0; `Err(message)` prints `fatal: <message>` on its
//! standard error and exits 128.
//!
//! The relay program is a child of git, which waits for it; it ends when
//! the handler returns, or when git closes its end. Dropping the [`Relay`]
//! stops accepting and waits for the calls in progress.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The program git runs. Frames from the test process are
/// `<kind: 1 byte><length: 4 bytes, big-endian><bytes>`: kind 1 is
/// standard output, 2 standard error, 3 the exit code (one byte).
const PROGRAM: &str = r#"import os, socket, struct, sys, threading

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
fields = [os.environ.get("GIT_PROTOCOL", ""), os.getcwd()] + sys.argv[2:]
header = "\0".join(fields).encode("utf-8", "surrogateescape")
sock.sendall(struct.pack(">I", len(header)) + header)

def carry_input():
    try:
        while True:
            data = os.read(0, 65536)
            if not data:
                break
            sock.sendall(data)
    except OSError:
        pass
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass

threading.Thread(target=carry_input, daemon=True).start()
answer = sock.makefile("rb")

def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]

try:
    while True:
        head = answer.read(5)
        if len(head) < 5:
            sys.stderr.write("relay: the test's server went away\n")
            os._exit(1)
        kind, length = struct.unpack(">BI", head)
        data = answer.read(length)
        if kind == 1:
            write_all(1, data)
        elif kind == 2:
            write_all(2, data)
        else:
            os._exit(data[0])
except OSError:
    os._exit(1)
"#;

/// How git started the relay: what a server process would have seen.
#[derive(Debug, Clone)]
pub struct Call {
    /// The service git asked for (`upload-pack`, `receive-pack`): the
    /// word after the relay in the command [`Relay::command`] gave.
    pub service: String,
    /// The arguments git added: options, then the repository's path.
    pub args: Vec<String>,
    /// `GIT_PROTOCOL`, if git set it.
    pub git_protocol: Option<String>,
    /// The working directory git ran the command in.
    pub cwd: PathBuf,
}

impl Call {
    /// The repository git named (its last argument), relative paths taken
    /// from the command's working directory.
    pub fn repository(&self) -> PathBuf {
        let named = self.args.last().map_or("", String::as_str);
        self.cwd.join(named)
    }
}

/// Serves one call: reads git's bytes from the reader, writes the answer.
pub type Handler = dyn Fn(&Call, &mut dyn Read, &mut dyn Write) -> Result<(), String> + Send + Sync;

/// A Unix socket served by a handler, and the command that reaches it.
pub struct Relay {
    dir: tempfile::TempDir,
    stop: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
    calls: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Relay {
    /// Listens on a new socket; every connection is served by `handler`
    /// on a thread of its own.
    pub fn start(
        handler: impl Fn(&Call, &mut dyn Read, &mut dyn Write) -> Result<(), String>
            + Send
            + Sync
            + 'static,
    ) -> Relay {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("relay.py"), PROGRAM).unwrap();
        let listener = UnixListener::bind(dir.path().join("socket")).unwrap();
        let handler: Arc<Handler> = Arc::new(handler);
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let accepting = {
            let (stop, calls) = (stop.clone(), calls.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let handler = handler.clone();
                    let call = std::thread::spawn(move || serve(stream, handler.as_ref()));
                    calls.lock().unwrap().push(call);
                }
            })
        };
        Relay {
            dir,
            stop,
            accepting: Some(accepting),
            calls,
        }
    }

    /// The command git runs for `service` (`--upload-pack=<command>`);
    /// git appends the repository's path.
    pub fn command(&self, service: &str) -> String {
        format!(
            "python3 '{}' '{}' {service}",
            self.dir.path().join("relay.py").display(),
            self.socket().display()
        )
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("socket")
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag.
        let _ = UnixStream::connect(self.socket());
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
        let calls = std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()));
        for call in calls {
            let _ = call.join();
        }
    }
}

/// Serves one connection: its header, then the handler on its bytes,
/// then the exit code.
fn serve(stream: UnixStream, handler: &Handler) {
    let mut input = stream.try_clone().unwrap();
    let Some(call) = read_call(&mut input) else {
        return;
    };
    let mut output = Frames(stream);
    let code = match handler(&call, &mut input, &mut output) {
        Ok(()) => 0,
        Err(message) => {
            let _ = output.frame(2, format!("fatal: {message}\n").as_bytes());
            128
        }
    };
    let _ = output.frame(3, &[code]);
}

/// The header the relay program sends first.
fn read_call(input: &mut UnixStream) -> Option<Call> {
    let mut length = [0; 4];
    input.read_exact(&mut length).ok()?;
    let mut header = vec![0; u32::from_be_bytes(length) as usize];
    input.read_exact(&mut header).ok()?;
    let text = String::from_utf8(header).ok()?;
    let mut fields = text.split('\0').map(str::to_owned);
    let git_protocol = fields.next().filter(|value| !value.is_empty());
    let cwd = PathBuf::from(fields.next()?);
    let service = fields.next()?;
    Some(Call {
        service,
        args: fields.collect(),
        git_protocol,
        cwd,
    })
}

/// The connection to the relay program: what is written is its standard
/// output.
struct Frames(UnixStream);

impl Frames {
    fn frame(&mut self, kind: u8, bytes: &[u8]) -> std::io::Result<()> {
        let length = u32::try_from(bytes.len()).expect("a frame under 4 GiB");
        let mut frame = Vec::with_capacity(5 + bytes.len());
        frame.push(kind);
        frame.extend_from_slice(&length.to_be_bytes());
        frame.extend_from_slice(bytes);
        self.0.write_all(&frame)
    }
}

impl Write for Frames {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.frame(1, bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

//! A server under test as a child process: started with its standard
//! output piped (servers print the addresses they listen on there), its
//! log (standard error) collected as it is written, so that a chatty
//! server never blocks on a full pipe, and killed when dropped, so that a
//! failing test leaves no server behind.
//!
//! What a server is started with (its program and arguments) is the
//! caller's; this is what every such launcher shares.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`ServerProcess::wait_for_log`] waits.
const LOG_WAIT: Duration = Duration::from_secs(60);

/// A running server process.
pub struct ServerProcess {
    /// In a mutex so that waiting for the log can see an exit while the
    /// server is shared.
    child: Mutex<Child>,
    log: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `cmd` and collects its log; returns it and its standard
    /// output, to read the addresses it prints from.
    pub fn spawn(cmd: &mut Command) -> (ServerProcess, BufReader<ChildStdout>) {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let reader = {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stderr);
                let mut line = String::new();
                while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                    log.lock().unwrap().push_str(&line);
                    line.clear();
                }
            })
        };
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let server = ServerProcess {
            child: Mutex::new(child),
            log,
            reader: Some(reader),
        };
        (server, stdout)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child().id()
    }

    fn child(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the log holds `text` (the server acts in the
    /// background); fails if the server exits first or after a minute.
    pub fn wait_for_log(&self, text: &str) {
        let start = Instant::now();
        while !self.log.lock().unwrap().contains(text) {
            if let Ok(Some(status)) = self.child().try_wait() {
                panic!("server exited ({status}) before logging {text:?}");
            }
            assert!(
                start.elapsed() < LOG_WAIT,
                "{text:?} never logged: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends the signal `name` (`HUP`, `TERM`, `STOP`, ...) with kill(1).
    pub fn signal(&self, name: &str) {
        let pid = self.pid().to_string();
        assert!(Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap()
            .success());
    }

    /// Stops the server with SIGTERM: its exit code and whole log.
    pub fn stop(mut self) -> (Option<i32>, String) {
        self.signal("TERM");
        let status = self.child().wait().unwrap();
        (status.code(), self.finish_log())
    }

    /// Kills the server at once: its whole log (to explain a failed
    /// start).
    pub fn kill(mut self) -> String {
        self.end();
        self.finish_log()
    }

    /// Kills the server (if it still runs) and waits for it.
    fn end(&mut self) {
        let mut child = self.child();
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The log once the server has exited and the reader read it all.
    fn finish_log(&mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.log()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.end();
    }
}

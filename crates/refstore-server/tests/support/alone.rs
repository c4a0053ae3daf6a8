//! What a process has one of, for the tests that read it: the log (one
//! subscriber per process, as `refstore serve` installs it) and the
//! observer the storage and protocol layers report to
//! ([`refstore_fs::observe`]: pushes, flushes, packs sent, the pack
//! cache). A test that reads either takes the process to itself with
//! [`alone`]: it waits until no other test of its binary has a server,
//! and none starts one until it ends; meanwhile everything logged is
//! captured, as `refstore serve` writes it on standard error, and the
//! reports reach the [`Metrics`] it asks for.
//!
//! Every other test shares the process: [`Served::start`] takes a shared
//! turn for the test's thread, held until the test ends. Logging is off
//! while no test is alone.
//!
//! [`Served::start`]: super::serve::Served::start

use refstore_fs::observe::Observer;
use refstore_server::metrics::Metrics;
use std::cell::RefCell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt;

/// Which tests hold the process: how many share it, and whether one has
/// it alone. Sharers are admitted whenever no test is alone, so a test
/// never waits on its own thread's turn.
struct Turns {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

static TURNS: Turns = Turns {
    state: Mutex::new((0, false)),
    changed: Condvar::new(),
};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The turn a test's thread holds; given back when the thread ends (a
/// test runs on a thread of its own) or when [`Alone`] is dropped.
enum Turn {
    Shared,
    Alone,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut state = lock(&TURNS.state);
        match self {
            Turn::Shared => state.0 -= 1,
            Turn::Alone => state.1 = false,
        }
        TURNS.changed.notify_all();
    }
}

thread_local! {
    static HELD: RefCell<Option<Turn>> = const { RefCell::new(None) };
}

/// Takes a shared turn for this thread, unless it holds one (or is
/// alone): called by every server a test starts.
pub fn shared() {
    if HELD.with(|held| held.borrow().is_some()) {
        return;
    }
    let mut state = lock(&TURNS.state);
    while state.1 {
        state = TURNS.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    state.0 += 1;
    drop(state);
    HELD.with(|held| *held.borrow_mut() = Some(Turn::Shared));
}

/// The captured log and what controls it.
struct Capture {
    text: Mutex<String>,
    level: reload::Handle<LevelFilter, tracing_subscriber::Registry>,
}

static CAPTURE: OnceLock<Capture> = OnceLock::new();

fn capture() -> &'static Capture {
    CAPTURE.get_or_init(|| {
        // Installed at trace level, so that `log` records (rustls, russh)
        // may pass at every level later; then off until a test is alone.
        let (filter, level) = reload::Layer::new(LevelFilter::TRACE);
        tracing_subscriber::registry()
            .with(filter)
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(|| Writer),
            )
            .try_init()
            .expect("the test binary installs its log subscriber once");
        level
            .reload(LevelFilter::OFF)
            .expect("the subscriber is installed");
        Capture {
            text: Mutex::new(String::new()),
            level,
        }
    })
}

/// Appends what the subscriber writes to the captured text.
struct Writer;

impl std::io::Write for Writer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        // Nothing is written while the capture is made: logging is off.
        if let Some(capture) = CAPTURE.get() {
            lock(&capture.text).push_str(&String::from_utf8_lossy(bytes));
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where the observer forwards the storage layers' reports: the alone
/// test's metrics, if it asked for them.
static OBSERVED: Mutex<Option<Arc<Metrics>>> = Mutex::new(None);

/// Forwards every report to [`OBSERVED`]; installed once per binary.
struct Forward;

fn observed() -> Option<Arc<Metrics>> {
    lock(&OBSERVED).clone()
}

impl Observer for Forward {
    fn flushed(&self, mechanism: &'static str, took: Duration) {
        observed().inspect(|m| m.flushed(mechanism, took));
    }
    fn transaction_committed(&self, refs: usize, took: Duration) {
        observed().inspect(|m| m.transaction_committed(refs, took));
    }
    fn pack_sent(&self, objects: u64, bytes: u64) {
        observed().inspect(|m| m.pack_sent(objects, bytes));
    }
    fn push_received(&self, refs_updated: usize) {
        observed().inspect(|m| m.push_received(refs_updated));
    }
    fn stale_read(&self) {
        observed().inspect(|m| m.stale_read());
    }
    fn copies_checked(&self, still_below: u64, copied: u64) {
        observed().inspect(|m| m.copies_checked(still_below, copied));
    }
    fn etcd_round(&self, leads: bool, revision: i64) {
        observed().inspect(|m| m.etcd_round(leads, revision));
    }
    fn etcd_reflog_expired(&self, records: u64) {
        observed().inspect(|m| m.etcd_reflog_expired(records));
    }
    fn etcd_compacted(&self, revision: i64) {
        observed().inspect(|m| m.etcd_compacted(revision));
    }
    fn etcd_defragmented(&self, ok: bool) {
        observed().inspect(|m| m.etcd_defragmented(ok));
    }
    fn etcd_db_size(&self, db_size: i64, in_use: i64) {
        observed().inspect(|m| m.etcd_db_size(db_size, in_use));
    }
    fn pack_cache_lookup(&self, outcome: &'static str) {
        observed().inspect(|m| m.pack_cache_lookup(outcome));
    }
    fn pack_cache_served(&self, bytes: u64) {
        observed().inspect(|m| m.pack_cache_served(bytes));
    }
    fn pack_cache_evicted(&self, entries: u64, bytes: u64) {
        observed().inspect(|m| m.pack_cache_evicted(entries, bytes));
    }
}

/// A test that has the process to itself: the log captured since it
/// began, at info level unless [`Alone::trace`] says otherwise.
pub struct Alone(());

/// Waits until no other test of the binary has a server, and keeps them
/// from starting one until the returned guard is dropped. Must come
/// before the test starts any server.
pub fn alone() -> Alone {
    let capture = capture();
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        refstore_fs::observe::install(Arc::new(Forward));
    });
    HELD.with(|held| {
        assert!(
            held.borrow().is_none(),
            "alone() must come before the test starts a server"
        )
    });
    let mut state = lock(&TURNS.state);
    while state.1 || state.0 > 0 {
        state = TURNS.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    state.1 = true;
    drop(state);
    HELD.with(|held| *held.borrow_mut() = Some(Turn::Alone));
    lock(&capture.text).clear();
    capture
        .level
        .reload(LevelFilter::INFO)
        .expect("the subscriber is installed");
    Alone(())
}

impl Alone {
    /// Captures every level from now on, `trace` included.
    pub fn trace(&self) {
        capture()
            .level
            .reload(LevelFilter::TRACE)
            .expect("the subscriber is installed");
    }

    /// The storage and protocol layers report to `metrics` from now on,
    /// as to the metrics `refstore serve` installs.
    pub fn observe(&self, metrics: &Arc<Metrics>) {
        *lock(&OBSERVED) = Some(metrics.clone());
    }

    /// The log so far.
    pub fn log(&self) -> String {
        lock(&capture().text).clone()
    }

    /// Waits until the log holds `text` (the server acts in the
    /// background); fails after a minute.
    pub fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.log().contains(text) {
            assert!(
                Instant::now() < deadline,
                "{text:?} never logged: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Alone {
    fn drop(&mut self) {
        let capture = capture();
        let _ = capture.level.reload(LevelFilter::OFF);
        *lock(&OBSERVED) = None;
        if std::thread::panicking() {
            eprintln!("the server's log:\n{}", lock(&capture.text));
        }
        HELD.with(|held| held.borrow_mut().take());
    }
}

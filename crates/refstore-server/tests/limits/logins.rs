//! HTTP logins against the server's credentials: password guessing held
//! to at most ten checked attempts a second from one address after the
//! first few (later ones refused with 429), while the user's own address
//! still logs in.

use crate::support::*;
use base64::Engine as _;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn setup(home: &Path, root: &Path) {
    Work::init(home, "work")
        .commit_empty("a")
        .bare_clone(&root.join("proj.git"));
}

/// The status of a push advertisement asked for as `user:password` from
/// the address `from`.
fn login(server: &Served, from: &str, user_password: &str) -> u16 {
    let mut stream = connect_from(from, server.addr);
    let basic = base64::engine::general_purpose::STANDARD.encode(user_password);
    let request = format!(
        "GET /proj.git/info/refs?service=git-receive-pack HTTP/1.0\r\nHost: x\r\nAuthorization: Basic {basic}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    read_answer(&mut stream).0
}

#[test]
fn guessing_is_throttled_per_address_without_locking_the_user_out() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let server = Serve::new(&root).pushes("alice:alice-pw\n").start();
    // alice works from 127.0.0.2.
    assert_eq!(login(&server, "127.0.0.2", "alice:alice-pw"), 200);

    // Eight connections at a time guess alice's password from 127.0.0.1.
    let checked = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let guessing = Arc::new(AtomicBool::new(true));
    let started = Instant::now();
    let guessers: Vec<_> = (0..8)
        .map(|i| {
            let (checked, refused, guessing) = (checked.clone(), refused.clone(), guessing.clone());
            let addr = server.addr;
            std::thread::spawn(move || {
                let mut n = 0;
                while guessing.load(Ordering::Relaxed) {
                    let mut stream = connect_from("127.0.0.1", addr);
                    let basic = base64::engine::general_purpose::STANDARD
                        .encode(format!("alice:guess-{i}-{n}"));
                    let request = format!(
                        "GET /proj.git/info/refs?service=git-receive-pack HTTP/1.0\r\nHost: x\r\nAuthorization: Basic {basic}\r\n\r\n"
                    );
                    stream.write_all(request.as_bytes()).unwrap();
                    match read_answer(&mut stream).0 {
                        401 => checked.fetch_add(1, Ordering::Relaxed),
                        429 => refused.fetch_add(1, Ordering::Relaxed),
                        other => panic!("a guess answered {other}"),
                    };
                    n += 1;
                }
            })
        })
        .collect();
    // Until the guessers have used up the free failures and are being
    // refused (the deadline bounds a hang only).
    let deadline = Instant::now() + Duration::from_secs(60);
    while checked.load(Ordering::Relaxed) < 5 || refused.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "no guess was ever refused");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Meanwhile alice, from her address, still logs in (her address is
    // not in the queue of her name's failures: see the throttle's unit
    // tests for the turn it gets).
    assert_eq!(login(&server, "127.0.0.2", "alice:alice-pw"), 200);
    guessing.store(false, Ordering::Relaxed);
    for guesser in guessers {
        guesser.join().unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let checked = checked.load(Ordering::Relaxed);
    // Five free failures, then one every 100 ms at most.
    let bound = 5 + (elapsed * 10.0).ceil() as usize + 1;
    assert!(
        checked <= bound,
        "{checked} guesses checked in {elapsed:.1} s (at most {bound})"
    );
    assert!(checked >= 5, "{checked}");
    assert!(refused.load(Ordering::Relaxed) > 0, "no guess was refused");
}

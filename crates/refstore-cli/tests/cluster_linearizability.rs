//! The cluster's refs are linearizable under concurrent clients and
//! faults: clients read refs (`git ls-remote`) and compare-and-swap them
//! (`git push --force-with-lease`) through different nodes while nodes are
//! killed (SIGKILL) and restarted, paused (SIGSTOP/SIGCONT), and etcd
//! members are killed and restarted. Every operation's call, answer and
//! return are recorded, and the history is checked by Porcupine (Go,
//! interop/porcupine), an existing linearizability checker.

mod cluster;
mod support;

use cluster::history::{self, git, push_result, read_value, Record, Rng};
use cluster::TestCluster;
use refstore_testsupport::porcupine;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{stderr, stdout};

const REFS: [&str; 2] = ["refs/heads/k0", "refs/heads/k1"];
const CLIENTS: usize = 6;
const OPS_PER_CLIENT: usize = 60;

#[test]
fn refs_are_linearizable_under_node_kills_pauses_and_etcd_member_kills() {
    let tmp = tempfile::tempdir().unwrap();
    let binary = porcupine::build(tmp.path());
    let c = TestCluster::start(tmp.path(), 3, 3);
    let (home, work) = (c.home.clone(), c.work.clone());
    let urls: Vec<String> = c.nodes.iter().map(|n| n.url()).collect();

    // Every value a compare-and-swap writes is a distinct commit, stored
    // where every node finds it.
    let base = c.rev("main");
    let tree = c.rev("main^{tree}");
    let values: Vec<String> = (0..CLIENTS * OPS_PER_CLIENT)
        .map(|n| c.commit_tree(&tree, &base, &format!("value {n}")))
        .collect();
    let shared: Vec<&str> = values.iter().map(String::as_str).collect();
    c.share_objects(&shared);

    let cluster = Mutex::new(c);
    let started = Instant::now();
    let clock = || started.elapsed().as_nanos();
    let history = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let mut faults = Vec::new();
    std::thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (home, work, urls, values, history) = (&home, &work, &urls, &values, &history);
                s.spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (client as u64 + 1));
                    // What this client last saw of each ref.
                    let mut seen = [String::new(), String::new()];
                    for op in 0..OPS_PER_CLIENT {
                        let r = rng.below(REFS.len());
                        let reference = REFS[r];
                        let url = &urls[rng.below(urls.len())];
                        let call = clock();
                        if rng.below(2) == 0 {
                            let o = git(home, work, &["ls-remote", url, reference]);
                            let ret = clock();
                            if !o.status.success() {
                                continue;
                            }
                            let value = read_value(&o);
                            seen[r] = value.clone();
                            history.lock().unwrap().push(Record {
                                client,
                                reference,
                                cas: None,
                                value,
                                call,
                                ret,
                                result: "ok",
                            });
                        } else {
                            let old = seen[r].clone();
                            let new = values[client * OPS_PER_CLIENT + op].clone();
                            let lease = format!("--force-with-lease={reference}:{old}");
                            let refspec = format!("{new}:{reference}");
                            let o =
                                git(home, work, &["push", "--porcelain", &lease, url, &refspec]);
                            let ret = clock();
                            let out = format!("{}{}", stdout(&o), stderr(&o));
                            let result = push_result(o.status.success(), &out);
                            if result == "ok" {
                                seen[r] = new.clone();
                            }
                            history.lock().unwrap().push(Record {
                                client,
                                reference,
                                cas: Some((old, new)),
                                value: String::new(),
                                call,
                                ret,
                                result,
                            });
                        }
                    }
                })
            })
            .collect();

        // Faults, one at a time, while the clients run. The sleeps are the
        // faults' spacing and durations (how long a node stays down or
        // stopped), which is what the clients are tested against.
        let (cluster, done, faults) = (&cluster, &done, &mut faults);
        let injector = s.spawn(move || {
            let mut n = 0usize;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(700));
                let mut c = cluster.lock().unwrap();
                let node = (n / 3) % 3;
                let fault = match n % 3 {
                    0 => {
                        c.kill_node(node);
                        std::thread::sleep(Duration::from_millis(300));
                        c.start_node(node);
                        format!("SIGKILL of node {} and restart", c.nodes[node].name)
                    }
                    1 => {
                        let pid = c.nodes[node].pid().to_string();
                        signal("-STOP", &pid);
                        std::thread::sleep(Duration::from_millis(800));
                        signal("-CONT", &pid);
                        format!("SIGSTOP of node {} for 0.8 s", c.nodes[node].name)
                    }
                    _ => {
                        let member = (n / 3) % 3;
                        c.etcd.kill_member(member);
                        std::thread::sleep(Duration::from_millis(1000));
                        c.etcd.start_member(member);
                        c.etcd.wait_healthy();
                        format!("SIGKILL of etcd member {member} and restart")
                    }
                };
                faults.push(fault);
                n += 1;
            }
        });
        for client in clients {
            client.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        injector.join().unwrap();
    });

    let history = history.into_inner().unwrap();
    let summary = format!(
        "{}; {} faults: {}",
        history::summary(&history),
        faults.len(),
        faults.join("; ")
    );
    eprintln!("{summary}");
    // A history without successful writes and reads, or without faults,
    // would check nothing.
    let (applied, read) = history::applied_and_read(&history);
    assert!(applied > 0 && read > 0, "{summary}");
    assert!(!faults.is_empty(), "{summary}");
    if let Err(verdict) = history::check(&binary, tmp.path(), &history) {
        panic!("{verdict}\n{summary}");
    }
}

/// The checker is not blind: a read of a value overwritten before the
/// read began is found.
#[test]
fn the_checker_finds_a_stale_read() {
    let tmp = tempfile::tempdir().unwrap();
    let binary = porcupine::build(tmp.path());
    let file = tmp.path().join("stale.json");
    let history = [
        "[{\"client\":0,\"ref\":\"r\",\"kind\":\"cas\",\"old\":\"\",\"new\":\"a\",\"value\":\"\",\"call\":1,\"return\":2,\"result\":\"ok\"}",
        ",{\"client\":0,\"ref\":\"r\",\"kind\":\"cas\",\"old\":\"a\",\"new\":\"b\",\"value\":\"\",\"call\":3,\"return\":4,\"result\":\"ok\"}",
        ",{\"client\":1,\"ref\":\"r\",\"kind\":\"read\",\"old\":\"\",\"new\":\"\",\"value\":\"a\",\"call\":5,\"return\":6,\"result\":\"ok\"}]",
    ];
    std::fs::write(&file, history.concat()).unwrap();
    let o = Command::new(&binary).arg(&file).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).starts_with("NOT linearizable: 3 operations"));
}

fn signal(which: &str, pid: &str) {
    assert!(Command::new("kill")
        .args([which, pid])
        .status()
        .unwrap()
        .success());
}

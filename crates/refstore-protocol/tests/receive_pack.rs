//! receive-pack called in process, as a transport calls it: the report of
//! a push that negotiated side-band-64k arrives inside band 1, after the
//! user's messages on band 2; the advertisement-only and stateless modes
//! write what git's `--advertise-refs` and `--stateless-rpc` do.

use refstore_fs::real::RealFs;
use refstore_protocol::receive_pack::{receive_pack, Options};
use refstore_protocol::Repository;
use std::sync::Arc;

const ZERO: &str = "0000000000000000000000000000000000000000";

mod support;
use support::{git_ok as git, pkt, push_target as repository};

fn open(tmp: &tempfile::TempDir) -> Repository {
    refstore_repo::Repository::open(Arc::new(RealFs::new()), &tmp.path().join("repo.git"), &[])
        .and_then(Repository::serve)
        .unwrap()
}

#[test]
fn the_report_rides_in_side_band_one_after_messages_on_two() {
    let (tmp, commit) = repository();
    let repo = open(&tmp);
    let input = [
        pkt(format!("{commit} {ZERO} refs/heads/gone\0report-status side-band-64k").as_bytes()),
        pkt(format!("{commit} {ZERO} refs/tags/t").as_bytes()),
        b"0000".to_vec(),
    ]
    .concat();
    let mut output = Vec::new();
    let options = Options {
        stateless_rpc: true,
        advertise_refs: false,
        ..Options::default()
    };
    receive_pack(&repo, &options, &mut &input[..], &mut output).unwrap();
    let message = b"\x02error: denying ref deletion for refs/heads/gone\n";
    let status = [
        pkt(b"unpack ok\n"),
        pkt(b"ng refs/heads/gone deletion prohibited\n"),
        pkt(b"ok refs/tags/t\n"),
        b"0000".to_vec(),
    ]
    .concat();
    let expected = [
        pkt(message),
        pkt([b"\x01", &status[..]].concat()),
        b"0000".to_vec(),
    ]
    .concat();
    assert_eq!(
        String::from_utf8_lossy(&output),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(
        git(&tmp.path().join("repo.git"), &["rev-parse", "gone"]),
        commit
    );
}

#[test]
fn advertise_refs_writes_only_the_advertisement() {
    let (tmp, commit) = repository();
    let repo = open(&tmp);
    let options = Options {
        stateless_rpc: true,
        advertise_refs: true,
        ..Options::default()
    };
    let mut output = Vec::new();
    // Input is not read in this mode.
    receive_pack(&repo, &options, &mut &b"garbage"[..], &mut output).unwrap();
    let text = String::from_utf8(output).unwrap();
    assert!(
        text[4..].starts_with(&format!("{commit} refs/heads/gone\0report-status ")),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("{commit} refs/tags/t\n0000")),
        "{text}"
    );
}

#[test]
fn a_client_with_nothing_to_push_gets_no_report() {
    let (tmp, _) = repository();
    let repo = open(&tmp);
    let mut output = Vec::new();
    let options = Options {
        stateless_rpc: true,
        advertise_refs: false,
        ..Options::default()
    };
    receive_pack(&repo, &options, &mut &b"0000"[..], &mut output).unwrap();
    assert!(output.is_empty());
}

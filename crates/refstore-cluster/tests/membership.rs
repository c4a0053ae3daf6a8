//! The cluster's membership against a real etcd: the file's `[nodes]`
//! until the first change, which writes the whole membership to etcd;
//! additions and removals by name, with duplicates, unknown names, bad
//! names and URLs, and removals below `object_copies` refused; and racing
//! removals never going below it together.

mod support;

use refstore_cluster::membership::MembershipError;
use refstore_cluster::{Cluster, ClusterConfig};
use std::path::Path;
use std::sync::Arc;
use support::etcd::EtcdCluster;

fn cluster(etcd: &EtcdCluster, copies: usize, nodes: usize) -> Arc<Cluster> {
    let table: String = (1..=nodes)
        .map(|i| format!("n{i} = \"http://127.0.0.1:{}\"\n", 9000 + i))
        .collect();
    let text = format!(
        "etcd = {}\nnode = \"n1\"\nobject_copies = {copies}\netcd_timeout_ms = 2000\n[nodes]\n{table}",
        etcd.endpoints_toml()
    );
    Cluster::connect(ClusterConfig::parse(&text, Path::new("cluster.toml")).unwrap()).unwrap()
}

fn names(c: &Cluster) -> Vec<String> {
    c.members().unwrap().nodes.into_keys().collect()
}

#[test]
fn the_file_is_the_membership_until_etcd_holds_one() {
    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd, 2, 3);
    let members = c.members().unwrap();
    assert!(!members.in_etcd);
    assert_eq!(members.nodes, c.config.nodes);

    let added = c.add_member("n4", "http://127.0.0.1:9004/").unwrap();
    assert!(added.in_etcd);
    assert_eq!(names(&c), ["n1", "n2", "n3", "n4"]);
    assert_eq!(c.members().unwrap().nodes["n4"], "http://127.0.0.1:9004");
    // Another node's file, with other [nodes], sees etcd's members.
    let other = cluster(&etcd, 2, 2);
    assert_eq!(names(&other), ["n1", "n2", "n3", "n4"]);

    let error = c.add_member("n4", "http://127.0.0.1:9999").unwrap_err();
    assert!(matches!(error, MembershipError::Exists(_)), "{error}");
    let error = c.add_member("n5", "http://127.0.0.1:9002").unwrap_err();
    assert!(
        error.to_string().contains("node 'n2' has the URL"),
        "{error}"
    );
    for (name, url) in [
        ("", "http://h:1"),
        ("a b", "http://h:1"),
        (".n", "http://h:1"),
        ("n/5", "http://h:1"),
        ("n5", "https://h:1"),
        ("n5", "h:1"),
    ] {
        let error = c.add_member(name, url).unwrap_err();
        assert!(matches!(error, MembershipError::Invalid(_)), "{error}");
    }
    assert_eq!(names(&c).len(), 4);
}

#[test]
fn removals_stop_at_object_copies_even_when_they_race() {
    let etcd = EtcdCluster::start(1);
    let c = cluster(&etcd, 2, 3);
    // The first removal writes the file's membership less the node.
    c.remove_member("n3").unwrap();
    assert_eq!(names(&c), ["n1", "n2"]);
    let error = c.remove_member("n2").unwrap_err().to_string();
    assert_eq!(
        error,
        "cluster: removing node 'n2' would leave 1 nodes, fewer than object_copies = 2; \
         add a node first or lower object_copies"
    );
    let error = c.remove_member("n9").unwrap_err().to_string();
    assert_eq!(
        error,
        "cluster: node 'n9' is not a member (members: n1, n2)"
    );

    // Four members, two copies: of racing removals of every member,
    // never more than two succeed.
    let mut port = 9100;
    for _ in 0..5 {
        while names(&c).len() < 4 {
            port += 1;
            c.add_member(&format!("m{port}"), &format!("http://127.0.0.1:{port}"))
                .unwrap();
        }
        let members = names(&c);
        let removed: usize = std::thread::scope(|s| {
            let handles: Vec<_> = members
                .iter()
                .map(|name| {
                    let c = c.clone();
                    s.spawn(move || c.remove_member(name).is_ok())
                })
                .collect();
            handles
                .into_iter()
                .map(|h| usize::from(h.join().unwrap()))
                .sum()
        });
        let left = names(&c);
        assert!(left.len() >= 2, "{left:?}");
        assert!(removed >= 1);
        assert_eq!(left.len(), 4 - removed);
    }
}

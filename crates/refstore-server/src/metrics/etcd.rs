//! The series of a cluster node's etcd housekeeping (refstore-cluster's
//! `housekeeping`): whether the node leads it, what the leader expired,
//! compacted and defragmented, and etcd's revision and database size as
//! the last round read them. An operator watches these to see that
//! compaction keeps up with the writes and that defragmentation gives the
//! freed space back before etcd's space quota is reached.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The etcd housekeeping series, registered under `refstore_cluster_`.
#[derive(Debug, Default)]
pub(super) struct EtcdMetrics {
    leader: Gauge,
    reflog_expired: Counter,
    compactions: Counter,
    compacted_revision: Gauge,
    defrags: Counter,
    defrag_failures: Counter,
    revision: Gauge,
    db_size: Gauge,
    db_in_use: Gauge,
}

impl EtcdMetrics {
    /// The series, registered in `registry` (the `refstore_` one).
    pub(super) fn register(registry: &mut Registry) -> EtcdMetrics {
        let m = EtcdMetrics::default();
        let counters = [
            (
                "cluster_reflog_records_expired",
                "Reflog records in etcd this node deleted as older than reflog_expire",
                &m.reflog_expired,
            ),
            (
                "cluster_etcd_compactions",
                "Compactions of etcd's revision history this node did",
                &m.compactions,
            ),
            (
                "cluster_etcd_defrags",
                "Defragmentations of an etcd member this node did",
                &m.defrags,
            ),
            (
                "cluster_etcd_defrag_failures",
                "Defragmentations of an etcd member this node tried and that failed",
                &m.defrag_failures,
            ),
        ];
        for (name, help, counter) in counters {
            registry.register(name, help, counter.clone());
        }
        let gauges = [
            ("cluster_housekeeping_leader", "1 while this node leads the cluster's etcd housekeeping, else 0", &m.leader),
            ("cluster_etcd_compacted_revision", "The revision this node last compacted etcd's history to (0: none yet)", &m.compacted_revision),
            ("cluster_etcd_revision", "etcd's current revision, as this node's last housekeeping round read it", &m.revision),
            ("cluster_etcd_db_size_bytes", "Size of an etcd member's database file, as last read", &m.db_size),
            ("cluster_etcd_db_in_use_bytes", "Part of an etcd member's database file in use, as last read (the rest is freed space a defragmentation gives back)", &m.db_in_use),
        ];
        for (name, help, gauge) in gauges {
            registry.register(name, help, gauge.clone());
        }
        m
    }

    pub(super) fn round(&self, leads: bool, revision: i64) {
        self.leader.set(i64::from(leads));
        self.revision.set(revision);
    }

    pub(super) fn reflog_expired(&self, records: u64) {
        self.reflog_expired.inc_by(records);
    }

    pub(super) fn compacted(&self, revision: i64) {
        self.compactions.inc();
        self.compacted_revision.set(revision);
    }

    pub(super) fn defragmented(&self, ok: bool) {
        if ok {
            self.defrags.inc()
        } else {
            self.defrag_failures.inc()
        };
    }

    pub(super) fn db_size(&self, db_size: i64, in_use: i64) {
        self.db_size.set(db_size);
        self.db_in_use.set(in_use);
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::Metrics;
    use refstore_fs::observe::Observer;

    #[test]
    fn housekeeping_reports_become_refstore_cluster_series() {
        let metrics = Metrics::new();
        metrics.etcd_round(true, 120);
        metrics.etcd_reflog_expired(5);
        metrics.etcd_reflog_expired(2);
        metrics.etcd_compacted(90);
        metrics.etcd_compacted(110);
        metrics.etcd_defragmented(true);
        metrics.etcd_defragmented(false);
        metrics.etcd_defragmented(true);
        metrics.etcd_db_size(4096, 1024);
        metrics.etcd_round(false, 130);
        let text = metrics.encode();
        for line in [
            "refstore_cluster_housekeeping_leader 0",
            "refstore_cluster_reflog_records_expired_total 7",
            "refstore_cluster_etcd_compactions_total 2",
            "refstore_cluster_etcd_compacted_revision 110",
            "refstore_cluster_etcd_defrags_total 2",
            "refstore_cluster_etcd_defrag_failures_total 1",
            "refstore_cluster_etcd_revision 130",
            "refstore_cluster_etcd_db_size_bytes 4096",
            "refstore_cluster_etcd_db_in_use_bytes 1024",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }
}

//! What `--metrics-listen` exposes: Prometheus series named `refstore_…`.
//!
//! One [`Metrics`] per server, shared by every transport. The storage and
//! protocol layers report through [`refstore_fs::observe`]; `Metrics` is
//! that observer, installed once per process by [`Metrics::install`].

mod etcd;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;

/// How a request reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Smart HTTP, with or without TLS.
    Http,
    /// The built-in SSH server.
    Ssh,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Ssh => "ssh",
        }
    }
}

/// Why a request or connection was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// 401: credentials missing or wrong, or an SSH key nobody owns.
    Unauthorized,
    /// 403 (or "repository not found" to a user who may not read it).
    Forbidden,
    /// 413: a request body over its limit.
    BodyTooLarge,
    /// 431: a request head over its limit.
    HeadTooLarge,
    /// 503: `--max-connections` reached.
    Overloaded,
    /// 503: `--max-connections-per-ip` reached.
    OverloadedAddress,
    /// A client too slow to send or to read (`--timeout`).
    Timeout,
    /// 400: a request that cannot be understood.
    BadRequest,
    /// A login attempt delayed, or refused (429), after failed logins
    /// (`crate::throttle`).
    Throttled,
}

impl Rejection {
    fn name(self) -> &'static str {
        match self {
            Rejection::Unauthorized => "unauthorized",
            Rejection::Forbidden => "forbidden",
            Rejection::BodyTooLarge => "body_too_large",
            Rejection::HeadTooLarge => "head_too_large",
            Rejection::Overloaded => "overloaded",
            Rejection::OverloadedAddress => "overloaded_address",
            Rejection::Timeout => "timeout",
            Rejection::BadRequest => "bad_request",
            Rejection::Throttled => "throttled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    transport: &'static str,
    service: &'static str,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServiceLabels {
    transport: &'static str,
    service: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TransportLabels {
    transport: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct MechanismLabels {
    mechanism: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latencies from 0.5 ms to about 70 s.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 18))
}

/// The server's series.
pub struct Metrics {
    registry: Registry,
    clients: ClientSeries,
    pushes: PushSeries,
    packs: PackSeries,
    cluster: ClusterSeries,
    pack_cache: PackCacheSeries,
    etcd: etcd::EtcdMetrics,
}

/// What clients ask and move: requests, bytes, connections, refusals.
struct ClientSeries {
    requests: Family<RequestLabels, Counter>,
    request_seconds: HistogramFamily<ServiceLabels>,
    bytes_sent: Family<TransportLabels, Counter>,
    bytes_received: Family<TransportLabels, Counter>,
    connections: Family<TransportLabels, Gauge>,
    rejected: Family<ReasonLabels, Counter>,
}

/// Pushes and the durable writes they make.
struct PushSeries {
    pushes: Counter,
    refs_updated: Counter,
    transaction_seconds: Histogram,
    flush_seconds: HistogramFamily<MechanismLabels>,
}

/// Packs sent to fetches.
struct PackSeries {
    objects_sent: Counter,
    bytes_sent: Counter,
}

/// A cluster node's reads and the copies of its packs.
struct ClusterSeries {
    stale_reads: Counter,
    packs_below_copies: Gauge,
    repair_packs_copied: Counter,
}

/// The pack cache: lookups, what it served, what it evicted.
struct PackCacheSeries {
    lookups: Family<OutcomeLabels, Counter>,
    served_bytes: Counter,
    evictions: Counter,
    evicted_bytes: Counter,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every series, at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let prefixed = registry.sub_registry_with_prefix("refstore");
        let clients = ClientSeries::register(prefixed);
        let pushes = PushSeries::register(prefixed);
        let packs = PackSeries::register(prefixed);
        let cluster = ClusterSeries::register(prefixed);
        let pack_cache = PackCacheSeries::register(prefixed);
        let etcd = etcd::EtcdMetrics::register(prefixed);
        Metrics {
            registry,
            clients,
            pushes,
            packs,
            cluster,
            pack_cache,
            etcd,
        }
    }

    /// Makes `metrics` the process's observer of storage and protocol
    /// reports (the first installed stays).
    pub fn install(metrics: &Arc<Metrics>) {
        refstore_fs::observe::install(metrics.clone());
    }

    /// A request answered with `status` (HTTP's; over SSH 200 for a
    /// service that succeeded, 500 for one that failed, or the status of
    /// the matching HTTP refusal) after `took`.
    pub fn request(
        &self,
        transport: Transport,
        service: &'static str,
        status: u16,
        took: Duration,
    ) {
        let transport = transport.name();
        self.clients
            .requests
            .get_or_create(&RequestLabels {
                transport,
                service,
                status,
            })
            .inc();
        self.clients
            .request_seconds
            .get_or_create(&ServiceLabels { transport, service })
            .observe(took.as_secs_f64());
    }

    /// Bytes moved over a connection.
    pub fn transferred(&self, transport: Transport, sent: u64, received: u64) {
        let labels = TransportLabels {
            transport: transport.name(),
        };
        self.clients.bytes_sent.get_or_create(&labels).inc_by(sent);
        self.clients
            .bytes_received
            .get_or_create(&labels)
            .inc_by(received);
    }

    /// A request or connection turned away.
    pub fn rejected(&self, reason: Rejection) {
        self.clients
            .rejected
            .get_or_create(&ReasonLabels {
                reason: reason.name(),
            })
            .inc();
    }

    /// Counts a connection as open until the returned guard is dropped.
    pub fn connection(self: &Arc<Self>, transport: Transport) -> ConnectionGuard {
        let gauge = self
            .clients
            .connections
            .get_or_create(&TransportLabels {
                transport: transport.name(),
            })
            .clone();
        gauge.inc();
        ConnectionGuard(gauge)
    }

    /// The exposition text of every series (Prometheus/OpenMetrics text
    /// format, ending with `# EOF`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

impl ClientSeries {
    fn register(registry: &mut Registry) -> ClientSeries {
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered, by transport, service and status",
            requests.clone(),
        );
        let request_seconds: HistogramFamily<ServiceLabels> = Family::new_with_constructor(latency);
        registry.register(
            "request_duration_seconds",
            "Time from a request's start to its last byte, by service",
            request_seconds.clone(),
        );
        let bytes_sent = Family::<TransportLabels, Counter>::default();
        registry.register("sent_bytes", "Bytes sent to clients", bytes_sent.clone());
        let bytes_received = Family::<TransportLabels, Counter>::default();
        registry.register(
            "received_bytes",
            "Bytes received from clients",
            bytes_received.clone(),
        );
        let connections = Family::<TransportLabels, Gauge>::default();
        // At zero from the start, so a scrape shows the gauge before the
        // first connection (a series that appears later breaks rate()).
        for transport in [Transport::Http, Transport::Ssh] {
            let _ = connections.get_or_create(&TransportLabels {
                transport: transport.name(),
            });
        }
        registry.register(
            "active_connections",
            "Connections open now",
            connections.clone(),
        );
        let rejected = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "rejected_requests",
            "Requests and connections turned away, by reason",
            rejected.clone(),
        );
        ClientSeries {
            requests,
            request_seconds,
            bytes_sent,
            bytes_received,
            connections,
            rejected,
        }
    }
}

impl PushSeries {
    fn register(registry: &mut Registry) -> PushSeries {
        let pushes = Counter::default();
        registry.register("pushes", "Pushes that updated refs", pushes.clone());
        let refs_updated = Counter::default();
        registry.register(
            "refs_updated",
            "Refs changed by pushes",
            refs_updated.clone(),
        );
        let transaction_seconds = latency();
        registry.register(
            "ref_transaction_commit_seconds",
            "Time to commit a ref transaction durably",
            transaction_seconds.clone(),
        );
        let flush_seconds: HistogramFamily<MechanismLabels> = Family::new_with_constructor(latency);
        registry.register(
            "flush_seconds",
            "Time of one flush point, by mechanism",
            flush_seconds.clone(),
        );
        PushSeries {
            pushes,
            refs_updated,
            transaction_seconds,
            flush_seconds,
        }
    }
}

impl PackSeries {
    fn register(registry: &mut Registry) -> PackSeries {
        let objects_sent = Counter::default();
        registry.register(
            "pack_objects_sent",
            "Objects sent in packs",
            objects_sent.clone(),
        );
        let bytes_sent = Counter::default();
        registry.register("pack_sent_bytes", "Bytes of packs sent", bytes_sent.clone());
        PackSeries {
            objects_sent,
            bytes_sent,
        }
    }
}

impl ClusterSeries {
    fn register(registry: &mut Registry) -> ClusterSeries {
        let stale_reads = Counter::default();
        registry.register(
            "cluster_stale_reads",
            "Reads a cluster node answered from its copy of the refs while etcd could not confirm it current (stale_reads)",
            stale_reads.clone(),
        );
        let packs_below_copies = Gauge::default();
        registry.register(
            "cluster_packs_below_copies",
            "Packs of this cluster node holding an object fewer than object_copies members hold, after its last repair pass",
            packs_below_copies.clone(),
        );
        let repair_packs_copied = Counter::default();
        registry.register(
            "cluster_repair_packs_copied",
            "Packs this cluster node sent to members lacking them to restore object_copies",
            repair_packs_copied.clone(),
        );
        ClusterSeries {
            stale_reads,
            packs_below_copies,
            repair_packs_copied,
        }
    }
}

impl PackCacheSeries {
    fn register(registry: &mut Registry) -> PackCacheSeries {
        let lookups = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "pack_cache_lookups",
            "Fetches that looked their pack up in the pack cache, by outcome: hit, follow (an entry being written), miss, corrupt",
            lookups.clone(),
        );
        let served_bytes = Counter::default();
        registry.register(
            "pack_cache_served_bytes",
            "Bytes of packs sent from the pack cache",
            served_bytes.clone(),
        );
        let evictions = Counter::default();
        registry.register(
            "pack_cache_evictions",
            "Pack cache entries removed by its size or age bound",
            evictions.clone(),
        );
        let evicted_bytes = Counter::default();
        registry.register(
            "pack_cache_evicted_bytes",
            "Bytes of pack cache entries removed by its size or age bound",
            evicted_bytes.clone(),
        );
        PackCacheSeries {
            lookups,
            served_bytes,
            evictions,
            evicted_bytes,
        }
    }
}

/// Keeps a connection counted in `refstore_active_connections`.
#[derive(Debug)]
pub struct ConnectionGuard(Gauge);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl refstore_fs::observe::Observer for Metrics {
    fn flushed(&self, mechanism: &'static str, took: Duration) {
        self.pushes
            .flush_seconds
            .get_or_create(&MechanismLabels { mechanism })
            .observe(took.as_secs_f64());
    }

    fn transaction_committed(&self, _refs: usize, took: Duration) {
        self.pushes.transaction_seconds.observe(took.as_secs_f64());
    }

    fn pack_sent(&self, objects: u64, bytes: u64) {
        self.packs.objects_sent.inc_by(objects);
        self.packs.bytes_sent.inc_by(bytes);
    }

    fn pack_cache_lookup(&self, outcome: &'static str) {
        self.pack_cache
            .lookups
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    fn pack_cache_served(&self, bytes: u64) {
        self.pack_cache.served_bytes.inc_by(bytes);
    }

    fn pack_cache_evicted(&self, entries: u64, bytes: u64) {
        self.pack_cache.evictions.inc_by(entries);
        self.pack_cache.evicted_bytes.inc_by(bytes);
    }

    fn push_received(&self, refs_updated: usize) {
        if refs_updated > 0 {
            self.pushes.pushes.inc();
            self.pushes.refs_updated.inc_by(refs_updated as u64);
        }
    }

    fn stale_read(&self) {
        self.cluster.stale_reads.inc();
    }

    fn copies_checked(&self, still_below: u64, copied: u64) {
        self.cluster
            .packs_below_copies
            .set(i64::try_from(still_below).unwrap_or(i64::MAX));
        self.cluster.repair_packs_copied.inc_by(copied);
    }

    fn etcd_round(&self, leads: bool, revision: i64) {
        self.etcd.round(leads, revision);
    }

    fn etcd_reflog_expired(&self, records: u64) {
        self.etcd.reflog_expired(records);
    }

    fn etcd_compacted(&self, revision: i64) {
        self.etcd.compacted(revision);
    }

    fn etcd_defragmented(&self, ok: bool) {
        self.etcd.defragmented(ok);
    }

    fn etcd_db_size(&self, db_size: i64, in_use: i64) {
        self.etcd.db_size(db_size, in_use);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use refstore_fs::observe::Observer;

    #[test]
    fn series_are_named_refstore_and_count_what_was_reported() {
        let metrics = Arc::new(Metrics::new());
        metrics.request(
            Transport::Http,
            "git-upload-pack",
            200,
            Duration::from_millis(3),
        );
        metrics.request(
            Transport::Http,
            "git-upload-pack",
            200,
            Duration::from_millis(5),
        );
        metrics.request(
            Transport::Ssh,
            "git-receive-pack",
            500,
            Duration::from_millis(5),
        );
        metrics.rejected(Rejection::HeadTooLarge);
        metrics.transferred(Transport::Http, 100, 7);
        metrics.push_received(3);
        metrics.push_received(0);
        metrics.pack_sent(12, 3456);
        metrics.flushed("syncfs", Duration::from_micros(700));
        metrics.transaction_committed(3, Duration::from_millis(2));
        metrics.stale_read();
        metrics.stale_read();
        metrics.copies_checked(4, 3);
        metrics.copies_checked(1, 2);
        let open = metrics.connection(Transport::Ssh);
        let text = metrics.encode();
        for line in [
            "refstore_requests_total{transport=\"http\",service=\"git-upload-pack\",status=\"200\"} 2",
            "refstore_requests_total{transport=\"ssh\",service=\"git-receive-pack\",status=\"500\"} 1",
            "refstore_rejected_requests_total{reason=\"head_too_large\"} 1",
            "refstore_sent_bytes_total{transport=\"http\"} 100",
            "refstore_received_bytes_total{transport=\"http\"} 7",
            "refstore_pushes_total 1",
            "refstore_refs_updated_total 3",
            "refstore_pack_objects_sent_total 12",
            "refstore_pack_sent_bytes_total 3456",
            "refstore_flush_seconds_count{mechanism=\"syncfs\"} 1",
            "refstore_ref_transaction_commit_seconds_count 1",
            "refstore_active_connections{transport=\"ssh\"} 1",
            "refstore_cluster_stale_reads_total 2",
            "refstore_cluster_packs_below_copies 1",
            "refstore_cluster_repair_packs_copied_total 5",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        drop(open);
        assert!(metrics
            .encode()
            .contains("refstore_active_connections{transport=\"ssh\"} 0"));
    }
}

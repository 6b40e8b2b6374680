//! A server's metrics.

use parking_lot::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::{PeerCounters, Traffic};
use crate::protocol::frame::Op;

/// The label of every op, by its wire number less one (`Op::Hello` is 1).
const OPS: [&str; 14] = [
    "hello",
    "init",
    "push",
    "pull",
    "push_pull",
    "set_optimizer",
    "set_params",
    "save_states",
    "load_states",
    "bye",
    "stats",
    "replicate",
    "push_rows",
    "pull_rows",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabel {
    op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabel {
    worker: String,
}

/// A server's metrics: traffic per peer, requests, sync rounds, memory held, connections.
#[derive(Debug)]
pub struct ServerMetrics {
    registry: Registry,
    traffic: Traffic,
    /// Request entries by op, indexed as [`OPS`].
    requests: Vec<Counter>,
    rounds: Counter,
    round_seconds: Histogram,
    worker_round: Family<WorkerLabel, Gauge>,
    /// Key pieces held.
    pub keys: Gauge,
    /// Bytes of the values held, with their optimizer state and sum buffers.
    pub value_bytes: Gauge,
    /// Bytes of reply frames queued for writing, over all connections.
    pub reply_bytes: Gauge,
    /// Bytes of large request frames being read, over all connections.
    pub request_bytes: Gauge,
    /// Connections open now.
    pub connections: Gauge,
    /// Connections refused (bad or missing handshake).
    pub refused: Counter,
    /// Every peer counted so far (a family lists its labels only when encoded).
    peers: Mutex<Vec<(String, PeerCounters)>>,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        ServerMetrics::new()
    }
}

impl ServerMetrics {
    /// A server's metrics, all zero.
    pub fn new() -> ServerMetrics {
        let mut registry = Registry::with_prefix("mxrs");
        let by_op = Family::<OpLabel, Counter>::default();
        let requests = OPS
            .iter()
            .map(|op| {
                let op = op.to_string();
                by_op.get_or_create(&OpLabel { op }).clone()
            })
            .collect();
        // 100 µs to about 52 s.
        let round_seconds = Histogram::new(exponential_buckets(1e-4, 2.0, 20));
        let m = ServerMetrics {
            registry: Registry::default(),
            traffic: Traffic::default(),
            requests,
            rounds: Counter::default(),
            round_seconds,
            worker_round: Family::default(),
            keys: Gauge::default(),
            value_bytes: Gauge::default(),
            reply_bytes: Gauge::default(),
            request_bytes: Gauge::default(),
            connections: Gauge::default(),
            refused: Counter::default(),
            peers: Mutex::new(Vec::new()),
        };
        let r = &mut registry;
        m.traffic.register(r, "data-plane frames");
        r.register(
            "requests",
            "Entries of workers' requests (one per key or slice of a key), by op",
            by_op,
        );
        r.register(
            "rounds_completed",
            "Sync rounds completed (one per key piece and round) or async pushes applied",
            m.rounds.clone(),
        );
        r.register(
            "round_seconds",
            "Time from a sync round's first push to its update, per key piece",
            m.round_seconds.clone(),
        );
        r.register(
            "worker_round",
            "The round each worker's latest push completes (a straggler's is lower)",
            m.worker_round.clone(),
        );
        r.register(
            "keys",
            "Key pieces held (the copies this server keeps as a backup included)",
            m.keys.clone(),
        );
        r.register(
            "value_bytes",
            "Bytes held for values, optimizer state and round sums",
            m.value_bytes.clone(),
        );
        r.register(
            "reply_bytes",
            "Bytes of reply frames queued and not yet written",
            m.reply_bytes.clone(),
        );
        r.register(
            "request_bytes",
            "Bytes of large request frames being read",
            m.request_bytes.clone(),
        );
        r.register(
            "connections",
            "Data-plane connections open",
            m.connections.clone(),
        );
        r.register(
            "connections_refused",
            "Connections refused for a failed or missing handshake",
            m.refused.clone(),
        );
        ServerMetrics { registry, ..m }
    }

    /// The counters of the connection to `peer` (`worker 0`, `server 1`).
    pub fn peer(&self, peer: &str) -> PeerCounters {
        let counters = self.traffic.peer(peer);
        let mut peers = self.peers.lock();
        if !peers.iter().any(|(p, _)| p == peer) {
            peers.push((peer.to_string(), counters.clone()));
        }
        counters
    }

    /// Counts `entries` request entries of `op`.
    pub fn requested(&self, op: Op, entries: usize) {
        if let Some(c) = (op as usize)
            .checked_sub(1)
            .and_then(|i| self.requests.get(i))
        {
            c.inc_by(entries as u64);
        }
    }

    /// A sync round of a piece completed, `took` after its first push (`None`: an async push).
    pub fn round_completed(&self, took: Option<Duration>) {
        self.rounds.inc();
        if let Some(took) = took {
            self.round_seconds.observe(took.as_secs_f64());
        }
    }

    /// Worker `worker`'s latest push completes round `round`.
    pub fn worker_pushed(&self, worker: u32, round: u64) {
        let label = WorkerLabel {
            worker: worker.to_string(),
        };
        let g = self.worker_round.get_or_create(&label);
        let round = round.min(i64::MAX as u64) as i64;
        if g.get() < round {
            g.set(round);
        }
    }

    /// Bytes read from and written to workers and servers so far: `(received, sent)`.
    pub fn traffic(&self) -> (u64, u64) {
        let peers = self.peers.lock();
        let received = peers.iter().map(|(_, c)| c.received_bytes.get()).sum();
        let sent = peers.iter().map(|(_, c)| c.sent_bytes.get()).sum();
        (received, sent)
    }

    /// The text a scrape gets.
    pub fn render(&self) -> String {
        super::render(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_as_openmetrics_text() {
        let m = ServerMetrics::new();
        let w = m.peer("worker 1");
        w.received(100);
        w.sent(2, 300);
        // The same peer again shares the counters.
        m.peer("worker 1").received(10);
        m.requested(Op::Push, 3);
        m.requested(Op::PullRows, 1);
        m.round_completed(Some(Duration::from_millis(3)));
        m.round_completed(None);
        m.worker_pushed(1, 7);
        m.worker_pushed(1, 5); // an older round does not move it back
        assert_eq!(m.traffic(), (110, 300));
        let text = m.render();
        for line in [
            "mxrs_received_bytes_total{peer=\"worker 1\"} 110",
            "mxrs_received_messages_total{peer=\"worker 1\"} 2",
            "mxrs_sent_bytes_total{peer=\"worker 1\"} 300",
            "mxrs_sent_messages_total{peer=\"worker 1\"} 2",
            "mxrs_requests_total{op=\"push\"} 3",
            "mxrs_requests_total{op=\"pull_rows\"} 1",
            "mxrs_requests_total{op=\"init\"} 0",
            "mxrs_rounds_completed_total 2",
            "mxrs_round_seconds_count 1",
            "mxrs_worker_round{worker=\"1\"} 7",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
    }
}

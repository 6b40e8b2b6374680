//! The scheduler's metrics: control-plane traffic per node, and the job's nodes.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Traffic;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: String,
}

/// The scheduler's metrics.
#[derive(Debug)]
pub struct SchedulerMetrics {
    registry: Registry,
    traffic: Traffic,
    nodes: Family<StateLabel, Gauge>,
    nodes_lost: Counter,
    /// Connections refused (bad or missing handshake).
    pub refused: Counter,
}

impl Default for SchedulerMetrics {
    fn default() -> Self {
        SchedulerMetrics::new()
    }
}

impl SchedulerMetrics {
    /// The scheduler's metrics, all zero.
    pub fn new() -> SchedulerMetrics {
        let mut r = Registry::with_prefix("mxrs");
        let m = SchedulerMetrics {
            registry: Registry::default(),
            traffic: Traffic::default(),
            nodes: Family::default(),
            nodes_lost: Counter::default(),
            refused: Counter::default(),
        };
        m.traffic.register(&mut r, "control-plane messages");
        r.register(
            "nodes",
            "Nodes of the job by state (alive, away, finished, lost, gone)",
            m.nodes.clone(),
        );
        r.register(
            "nodes_lost",
            "Nodes declared lost (a restarted worker lost again counts again)",
            m.nodes_lost.clone(),
        );
        r.register(
            "connections_refused",
            "Connections refused for a failed or missing handshake",
            m.refused.clone(),
        );
        SchedulerMetrics { registry: r, ..m }
    }

    /// Counts a message of `bytes` from `peer` and the `replies` messages of `reply_bytes` in
    /// all sent back (the opening of an event stream: none, its events count one by one).
    pub fn exchanged(&self, peer: &str, bytes: usize, replies: usize, reply_bytes: usize) {
        let c = self.traffic.peer(peer);
        c.received(bytes);
        c.sent(replies, reply_bytes);
    }

    /// Counts an unasked message of `bytes` sent to `peer` (an event).
    pub fn exchanged_out(&self, peer: &str, bytes: usize) {
        self.traffic.peer(peer).sent(1, bytes);
    }

    /// Sets how many nodes are in each state, and how many times one was lost so far.
    pub fn set_nodes(&self, counts: &[(&str, usize)], losses: u64) {
        let counted = self.nodes_lost.get();
        if losses > counted {
            self.nodes_lost.inc_by(losses - counted);
        }
        for (state, n) in counts {
            let label = StateLabel {
                state: state.to_string(),
            };
            self.nodes.get_or_create(&label).set(*n as i64);
        }
    }

    /// The text a scrape gets.
    pub fn render(&self) -> String {
        super::render(&self.registry)
    }
}

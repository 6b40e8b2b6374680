//! What a scheduler or server has done, as Prometheus metrics, and the HTTP endpoint that
//! serves them.
//!
//! Every node counts all the time (the counters are atomics, bumped where the work happens, with
//! the per-peer handles looked up once per connection); the endpoint exists only when the node is
//! given a port (`MXRS_METRICS_PORT`, `--metrics-port`). `GET /metrics` answers in the
//! OpenMetrics text format, which Prometheus scrapes; names start with `mxrs_`.
//!
//! # Layout
//! - `server`: a server's metrics ([`ServerMetrics`]).
//! - `scheduler`: the scheduler's ([`SchedulerMetrics`]).
//! - `http`: the endpoint.

mod http;
mod scheduler;
mod server;

pub use http::{CONTENT_TYPE, serve};
pub use scheduler::SchedulerMetrics;
pub use server::ServerMetrics;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The label of a metric counted per peer: `worker 0`, `server 1`, `scheduler`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabel {
    /// Who is at the other end.
    pub peer: String,
}

/// What one connection counts: frames (or messages) and their bytes each way.
#[derive(Clone, Default)]
pub struct PeerCounters {
    /// Bytes read from the peer.
    pub received_bytes: Counter,
    /// Frames read from the peer.
    pub received_messages: Counter,
    /// Bytes written to the peer.
    pub sent_bytes: Counter,
    /// Frames written to the peer.
    pub sent_messages: Counter,
}

impl PeerCounters {
    /// Counts a frame of `bytes` read.
    pub fn received(&self, bytes: usize) {
        self.received_bytes.inc_by(bytes as u64);
        self.received_messages.inc();
    }

    /// Counts `frames` frames of `bytes` in all written.
    pub fn sent(&self, frames: usize, bytes: usize) {
        self.sent_bytes.inc_by(bytes as u64);
        self.sent_messages.inc_by(frames as u64);
    }
}

impl std::fmt::Debug for PeerCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerCounters")
            .field("received_bytes", &self.received_bytes.get())
            .field("sent_bytes", &self.sent_bytes.get())
            .finish()
    }
}

/// Bytes and messages each way, by peer.
#[derive(Debug, Default)]
struct Traffic {
    received_bytes: Family<PeerLabel, Counter>,
    received_messages: Family<PeerLabel, Counter>,
    sent_bytes: Family<PeerLabel, Counter>,
    sent_messages: Family<PeerLabel, Counter>,
}

impl Traffic {
    /// Registers the four families in `r`, as the traffic of `plane` (`data-plane frames`).
    fn register(&self, r: &mut Registry, plane: &str) {
        r.register(
            "received_bytes",
            format!("Bytes of {plane} read, by peer"),
            self.received_bytes.clone(),
        );
        r.register(
            "received_messages",
            format!("Count of {plane} read, by peer"),
            self.received_messages.clone(),
        );
        r.register(
            "sent_bytes",
            format!("Bytes of {plane} written, by peer"),
            self.sent_bytes.clone(),
        );
        r.register(
            "sent_messages",
            format!("Count of {plane} written, by peer"),
            self.sent_messages.clone(),
        );
    }

    /// The counters of `peer`.
    fn peer(&self, peer: &str) -> PeerCounters {
        let label = PeerLabel {
            peer: peer.to_string(),
        };
        PeerCounters {
            received_bytes: self.received_bytes.get_or_create(&label).clone(),
            received_messages: self.received_messages.get_or_create(&label).clone(),
            sent_bytes: self.sent_bytes.get_or_create(&label).clone(),
            sent_messages: self.sent_messages.get_or_create(&label).clone(),
        }
    }
}

/// Binds the metrics endpoint of `who` (`the scheduler`, `server 0`) on `ip:port` (0: any free
/// port) and says on stderr where it is, so that a launcher's log shows it.
///
/// # Errors
/// [`PsError::Config`](crate::PsError::Config) naming `MXRS_METRICS_PORT` when the port cannot
/// be bound.
pub async fn bind(
    ip: std::net::IpAddr,
    port: u16,
    who: &str,
) -> crate::error::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind((ip, port))
        .await
        .map_err(|e| crate::error::PsError::Config {
            var: "MXRS_METRICS_PORT".into(),
            reason: format!("cannot serve metrics on {ip}:{port}: {e}"),
        })?;
    if let Ok(addr) = listener.local_addr() {
        crate::node::say(&format!("mxrs: metrics of {who} at http://{addr}/metrics"));
    }
    Ok(listener)
}

/// Renders a registry in the OpenMetrics text format.
fn render(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

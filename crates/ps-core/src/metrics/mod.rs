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
pub use server::{PeerCounters, ServerMetrics};

use prometheus_client::encoding::EncodeLabelSet;

/// The label of a metric counted per peer: `worker 0`, `server 1`, `scheduler`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabel {
    /// Who is at the other end.
    pub peer: String,
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
        eprintln!("mxrs: metrics of {who} at http://{addr}/metrics");
    }
    Ok(listener)
}

/// Renders a registry in the OpenMetrics text format.
fn render(registry: &prometheus_client::registry::Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

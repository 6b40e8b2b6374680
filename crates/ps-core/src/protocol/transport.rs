//! Authenticated TCP for both planes: listeners that hand out only connections which passed the
//! handshake, outgoing connections that run it, and a gRPC channel built on top of them.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use prometheus_client::metrics::counter::Counter;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint, Uri};

use super::auth;
use crate::error::{PsError, Result};

/// Binds a listener on `ip:port` (port 0 picks a free one).
pub async fn listen(ip: IpAddr, port: u16) -> Result<TcpListener> {
    TcpListener::bind((ip, port))
        .await
        .map_err(|e| PsError::io(format!("bind {ip}:{port}"), e))
}

/// Opens a connection to `addr`, sets `TCP_NODELAY` and runs the handshake.
pub async fn connect(addr: SocketAddr, secret: Option<&[u8]>) -> Result<TcpStream> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| PsError::io(format!("connect to {addr}"), e))?;
    stream
        .set_nodelay(true)
        .map_err(|e| PsError::io("set TCP_NODELAY", e))?;
    auth::connect(&mut stream, secret).await?;
    Ok(stream)
}

/// Handshakes a listener runs at once; further connections wait in the kernel's backlog.
pub const MAX_PENDING_HANDSHAKES: usize = 64;

/// Accepts connections on `listener` forever and yields those that pass the handshake. Each
/// handshake runs in its own task, so a silent or hostile peer delays nobody; at most
/// [`MAX_PENDING_HANDSHAKES`] run at once, and each has the handshake timeout
/// (`auth::HANDSHAKE_TIMEOUT`). Failures are logged, counted in `refused` and the connection
/// dropped. Ends,
/// handshakes in progress included, when the receiver is dropped.
pub fn authenticated(
    listener: TcpListener,
    secret: Option<Arc<[u8]>>,
    refused: Counter,
) -> ReceiverStream<std::io::Result<TcpStream>> {
    let (tx, rx) = mpsc::channel(64);
    let pending = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
    tokio::spawn(async move {
        loop {
            let permit = tokio::select! {
                permit = pending.clone().acquire_owned() => match permit {
                    Ok(p) => p,
                    Err(_) => return,
                },
                _ = tx.closed() => return,
            };
            let (mut stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = tx.closed() => return,
            };
            let tx = tx.clone();
            let secret = secret.clone();
            let refused = refused.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let handshake = tokio::select! {
                    r = auth::accept(&mut stream, secret.as_deref()) => r,
                    _ = tx.closed() => return,
                };
                drop(permit);
                match handshake {
                    Ok(()) => {
                        tracing::debug!("accepted connection from {peer}");
                        let _ = tx.send(Ok(stream)).await;
                    }
                    Err(e) => {
                        refused.inc();
                        tracing::warn!("refused connection from {peer}: {e}");
                    }
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// A gRPC channel to `addr` whose every connection runs the handshake first.
///
/// # Errors
/// [`PsError::Auth`] when the handshake fails (a different secret, or not an mxrs node);
/// [`PsError::Rpc`] when `addr` cannot be reached.
pub async fn grpc_channel(addr: SocketAddr, secret: Option<Arc<[u8]>>) -> Result<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| PsError::Rpc(format!("bad scheduler address {addr}: {e}")))?;
    let connector = tower::service_fn(move |_: Uri| {
        let secret = secret.clone();
        async move {
            connect(addr, secret.as_deref())
                .await
                .map(TokioIo::new)
                .map_err(std::io::Error::other)
        }
    });
    endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|e| match auth_failure(&e) {
            Some(reason) => PsError::Auth(format!("scheduler at {addr}: {reason}")),
            None => PsError::Rpc(format!(
                "cannot reach the scheduler at {addr}: {}",
                source_chain(&e)
            )),
        })
}

/// The handshake failure somewhere in `e`'s chain of sources. The connector carries its
/// [`PsError`] through tonic inside an `io::Error`, so look inside those too.
fn auth_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        let inner = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<PsError>());
        if let Some(PsError::Auth(reason)) = err.downcast_ref::<PsError>().or(inner) {
            return Some(reason.clone());
        }
        cur = err.source();
    }
    None
}

/// `e` and its sources joined, so a transport error shows its root cause.
pub fn source_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

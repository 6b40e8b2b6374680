//! The server: holds a share of the keys, sums the workers' pushes and applies the optimizer.
//!
//! # Layout
//! - `store`: sharded map of key pieces; rank-0-wins initialisation.
//! - `key`: one piece's value, sync round, merge buffer, waiting pulls and optimizer state.
//! - `handlers`: one function per request op, dispatched by `Op`.
//! - `connection`: a worker's connection: the reader that dispatches and the writer that answers.
//! - `reply`: reply frames assembled from entries that complete at different times.

mod connection;
mod handlers;
mod key;
mod reply;
mod store;

use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_stream::StreamExt;

use crate::error::Result;
use crate::protocol::frame::Mode;
use crate::protocol::transport;
use crate::updater::{OptimizerSpec, Updater};
use store::Store;

/// State shared by all connections of one server.
pub(crate) struct Shared {
    num_workers: u32,
    max_frame: u64,
    mode: Mutex<Option<Mode>>,
    store: Store,
    updater: RwLock<Option<Arc<Installed>>>,
}

/// The optimizer in use and its generation.
#[derive(Clone)]
struct Installed {
    spec: OptimizerSpec,
    updater: Arc<Updater>,
    epoch: u64,
}

/// A parameter server's data plane.
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// A server for a job of `num_workers` workers that refuses frames over `max_frame` bytes.
    pub fn new(num_workers: u32, max_frame: u64) -> Server {
        Server {
            shared: Arc::new(Shared {
                num_workers,
                max_frame,
                mode: Mutex::new(None),
                store: Store::new(),
                updater: RwLock::new(None),
            }),
        }
    }

    /// Serves workers that connect to `listener` and prove they know `secret`, until
    /// `shutdown` resolves; then closes every connection.
    pub async fn serve(
        &self,
        listener: TcpListener,
        secret: Option<Arc<[u8]>>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut incoming = transport::authenticated(listener, secret);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                conn = incoming.next() => match conn {
                    Some(Ok(stream)) => {
                        let shared = self.shared.clone();
                        let stop = stop_rx.clone();
                        tokio::spawn(connection::run(shared, stream, stop));
                    }
                    Some(Err(e)) => tracing::warn!("accept: {e}"),
                    None => break,
                },
                _ = &mut shutdown => break,
            }
        }
        let _ = stop_tx.send(true);
        Ok(())
    }
}

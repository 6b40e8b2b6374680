//! Shared helpers of the integration tests: in-process servers on 127.0.0.1, workers, values.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ps_core::protocol::frame::Mode;
use ps_core::protocol::transport;
use ps_core::server::Server;
use ps_core::worker::{DataPlane, Worker};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Hard limit for any single test step.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Runs `f` under the hard limit.
pub async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test step timed out")
}

/// Servers running in this process.
pub struct Servers {
    pub addrs: Vec<(SocketAddr, String)>,
    stops: Vec<oneshot::Sender<()>>,
    tasks: Vec<JoinHandle<()>>,
    pub secret: Option<Arc<[u8]>>,
}

impl Servers {
    /// Starts `s` servers for `w` workers.
    pub async fn start(s: usize, w: u32, secret: Option<&[u8]>) -> Servers {
        let secret: Option<Arc<[u8]>> = secret.map(Arc::from);
        let mut out = Servers {
            addrs: Vec::new(),
            stops: Vec::new(),
            tasks: Vec::new(),
            secret: secret.clone(),
        };
        for i in 0..s {
            let listener = transport::listen("127.0.0.1".parse().unwrap(), 0)
                .await
                .unwrap();
            let addr = listener.local_addr().unwrap();
            let (tx, rx) = oneshot::channel::<()>();
            let server = Server::new(w, 1 << 30);
            let secret = secret.clone();
            out.tasks.push(tokio::spawn(async move {
                server
                    .serve(listener, secret, async {
                        let _ = rx.await;
                    })
                    .await
                    .unwrap();
            }));
            out.addrs.push((addr, format!("server {i} on {addr}")));
            out.stops.push(tx);
        }
        out
    }

    pub fn plane(&self, rank: u32, w: u32, mode: Mode, bound: u64) -> DataPlane {
        DataPlane {
            servers: self.addrs.clone(),
            rank,
            num_workers: w,
            mode,
            bigarray_bound: bound,
            max_frame_bytes: 1 << 30,
            secret: self.secret.clone(),
        }
    }

    /// Connects `w` workers.
    pub async fn workers(&self, w: u32, mode: Mode, bound: u64) -> Vec<Worker> {
        let mut out = Vec::new();
        for rank in 0..w {
            out.push(
                within(Worker::connect(self.plane(rank, w, mode, bound)))
                    .await
                    .unwrap(),
            );
        }
        out
    }

    pub async fn stop(self) {
        for s in self.stops {
            let _ = s.send(());
        }
        for t in self.tasks {
            within(t).await.unwrap();
        }
    }
}

pub fn f32s(v: &[f32]) -> Bytes {
    Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
}

pub fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn f64s(v: &[f64]) -> Bytes {
    Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
}

pub fn to_f64(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

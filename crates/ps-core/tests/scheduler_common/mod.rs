//! Helpers shared by the scheduler's integration tests: a scheduler on a free port of
//! 127.0.0.1, nodes joining it, and waits for what the nodes observe.

#![allow(dead_code)] // each test binary uses its own subset

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use ps_core::protocol::pb::scheduler_client::SchedulerClient;
use ps_core::protocol::transport;
use ps_core::scheduler::{ControlClient, JobHealth, Outcome, serve};
use ps_core::{Config, PsError, Result, Role};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// No test may take longer than this.
pub const DEADLINE: Duration = Duration::from_secs(10);

pub async fn within<T>(test: impl Future<Output = T>) -> T {
    timeout(DEADLINE, test)
        .await
        .expect("test ran past its deadline")
}

/// A scheduler serving on a free port.
pub struct Scheduler {
    pub cfg: Config,
    pub serve: JoinHandle<Result<Outcome>>,
    pub stop: Option<oneshot::Sender<()>>,
}

impl Scheduler {
    /// Starts a scheduler for `servers` and `workers` with fast heart-beats, after `tweak`.
    pub async fn start(servers: u32, workers: u32, tweak: impl FnOnce(&mut Config)) -> Scheduler {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut cfg = Config::local(port, servers, workers);
        cfg.heartbeat_interval = Duration::from_millis(50);
        cfg.heartbeat_timeout = Duration::from_secs(1);
        tweak(&mut cfg);
        let (stop, stopped) = oneshot::channel::<()>();
        let scheduler_cfg = cfg.clone();
        let serve = tokio::spawn(async move {
            let signal = async move {
                if stopped.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            serve(&scheduler_cfg, listener, signal).await
        });
        Scheduler {
            cfg,
            serve,
            stop: Some(stop),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.cfg.root_addr().unwrap()
    }

    /// Waits for `serve` to return, then checks that its port closed.
    pub async fn outcome(self) -> Outcome {
        let addr = self.addr();
        let outcome = self.serve.await.unwrap().unwrap();
        assert_port_closes(addr).await;
        outcome
    }
}

/// Once `serve` has returned, nothing listens on its port any more.
pub async fn assert_port_closes(addr: SocketAddr) {
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Joins as a worker, with `cfg` changed by `tweak`.
pub fn worker(cfg: &Config, tweak: impl FnOnce(&mut Config)) -> JoinHandle<Result<ControlClient>> {
    let mut cfg = cfg.clone();
    tweak(&mut cfg);
    tokio::spawn(async move { ControlClient::join(&cfg, Role::Worker, "127.0.0.1", 0).await })
}

/// Joins as a server advertising data-plane port `port`.
pub fn server(cfg: &Config, port: u16) -> JoinHandle<Result<ControlClient>> {
    let cfg = cfg.clone();
    tokio::spawn(async move { ControlClient::join(&cfg, Role::Server, "127.0.0.1", port).await })
}

pub async fn joined(j: JoinHandle<Result<ControlClient>>) -> ControlClient {
    j.await.unwrap().unwrap()
}

pub fn rejected(r: Result<ControlClient>) -> String {
    match r {
        Err(PsError::Rejected(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub async fn refusal(j: JoinHandle<Result<ControlClient>>) -> String {
    rejected(j.await.unwrap())
}

/// Joins `servers` servers (ports 7000, 7001, ...) and `workers` workers concurrently;
/// returns both in rank order.
pub async fn form(
    cfg: &Config,
    servers: u16,
    workers: u16,
) -> (Vec<ControlClient>, Vec<ControlClient>) {
    let mut joins: Vec<_> = (0..servers).map(|i| server(cfg, 7000 + i)).collect();
    joins.extend((0..workers).map(|_| worker(cfg, |_| {})));
    let mut nodes = Vec::new();
    for j in joins {
        nodes.push(joined(j).await);
    }
    nodes.sort_by_key(|n| n.membership().me.rank);
    nodes
        .into_iter()
        .partition(|n| n.membership().me.role == Role::Server)
}

pub async fn health_when(client: &ControlClient, f: impl Fn(&JobHealth) -> bool) -> JobHealth {
    client.health().wait_for(|h| f(h)).await.unwrap().clone()
}

pub async fn lost(client: &ControlClient) -> String {
    health_when(client, |h| h.lost.is_some())
        .await
        .lost
        .unwrap()
}

pub async fn raw_client(addr: SocketAddr) -> SchedulerClient<tonic::transport::Channel> {
    SchedulerClient::new(
        transport::grpc_channel(addr, Default::default())
            .await
            .unwrap(),
    )
}

/// Waits until the scheduler holds a registration for every worker place. The probe is refused
/// either way and never registers: "all places taken" is checked before the worker id's range.
pub async fn until_workers_registered(cfg: &Config) {
    loop {
        let e = refusal(worker(cfg, |c| c.worker_id = Some(u32::MAX))).await;
        if e.contains("places and all are taken") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Runs `f` on a runtime of its own in a thread, then freezes that thread (its sockets stay
/// open, nothing answers on them) until the returned sender is used or dropped.
pub fn frozen_after<T: Send + 'static>(
    f: impl Future<Output = T> + Send + 'static,
) -> (oneshot::Receiver<T>, std::sync::mpsc::Sender<()>) {
    let (done, result) = oneshot::channel();
    let (thaw, frozen) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let _ = done.send(f.await);
            // Block the runtime itself: none of its tasks runs until thawed.
            let _ = frozen.recv();
        });
    });
    (result, thaw)
}

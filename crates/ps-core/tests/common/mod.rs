//! Shared helpers of the integration tests: in-process servers on 127.0.0.1, workers, values.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ps_core::protocol::connection::{FrameReader, FrameWriter};
use ps_core::protocol::frame::{Entry, Frame, Mode, Op};
use ps_core::protocol::transport::{self, Credentials, LinkRead, LinkWrite, Listeners};
use ps_core::scheduler::{NodeInfo, Topology};
use ps_core::server::{Farewell, Limits, ReplicaConfig, Server};
use ps_core::worker::{DataPlane, Worker};
use ps_core::{DType, PsError, Role};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Hard limit for any single test step.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Runs `f` under the hard limit.
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test step timed out")
}

/// Where server `i` reaches the others, given their addresses.
pub type Peers = dyn Fn(usize, &[(SocketAddr, String)]) -> Vec<(SocketAddr, String)>;

/// A TCP proxy on 127.0.0.1 whose connections the test can stall (what goes one way is read
/// and dropped), cut, and which can stop accepting.
pub struct Proxy {
    pub addr: SocketAddr,
    target: Arc<std::sync::Mutex<Option<SocketAddr>>>,
    conns: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    swallow: Arc<std::sync::atomic::AtomicBool>,
    swallowed: Arc<std::sync::atomic::AtomicUsize>,
    accepting: JoinHandle<()>,
}

impl Proxy {
    /// Listens; connections go where [`Proxy::forward_to`] says.
    pub async fn bind() -> Proxy {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let target: Arc<std::sync::Mutex<Option<SocketAddr>>> = Arc::default();
        let conns: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let swallow: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let swallowed: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let (to, held, drop_it) = (target.clone(), conns.clone(), swallow.clone());
        let dropped = swallowed.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Some(dest) = *to.lock().unwrap() else {
                    continue;
                };
                let (drop_it, dropped) = (drop_it.clone(), dropped.clone());
                held.lock().unwrap().push(tokio::spawn(async move {
                    let Ok(outbound) = tokio::net::TcpStream::connect(dest).await else {
                        return;
                    };
                    let ((mut ir, mut iw), (mut or, mut ow)) =
                        (inbound.into_split(), outbound.into_split());
                    let forth = async {
                        let mut buf = vec![0u8; 1 << 16];
                        while let Ok(n @ 1..) = ir.read(&mut buf).await {
                            if drop_it.load(std::sync::atomic::Ordering::SeqCst) {
                                dropped.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                            } else if ow.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    let back = tokio::io::copy(&mut or, &mut iw);
                    tokio::select! {
                        _ = forth => {}
                        _ = back => {}
                    }
                }));
            }
        });
        Proxy {
            addr,
            target,
            conns,
            swallow,
            swallowed,
            accepting,
        }
    }

    /// Waits until a stalled connection has dropped some bytes.
    pub async fn dropped_some(&self) {
        within(async {
            while self.swallowed.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
    }

    pub fn forward_to(&self, dest: SocketAddr) {
        *self.target.lock().unwrap() = Some(dest);
    }

    /// From now on, what the connecting side sends is read and dropped.
    pub fn stall(&self) {
        self.swallow
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Closes every connection made so far (new ones are taken, and forward again).
    pub fn cut(&self) {
        self.swallow
            .store(false, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    /// Stops taking connections and closes those made.
    pub fn close(&self) {
        self.accepting.abort();
        self.cut();
    }
}

/// Servers running in this process.
pub struct Servers {
    pub addrs: Vec<(SocketAddr, String)>,
    pub servers: Vec<Arc<Server>>,
    stops: Vec<oneshot::Sender<Option<Farewell>>>,
    tasks: Vec<JoinHandle<ps_core::Result<()>>>,
    pub creds: Credentials,
}

impl Servers {
    /// Starts `s` servers for `w` workers.
    pub async fn start(s: usize, w: u32, secret: Option<&[u8]>) -> Servers {
        let limits = Limits {
            max_frame: 1 << 30,
            max_inflight: 1 << 30,
        };
        Servers::start_with(s, w, secret, limits).await
    }

    /// Starts `s` servers for `w` workers in `mode`, each keeping `replicas` backups of the
    /// others' keys (placement with `bound`, as the workers' `plane` says).
    pub async fn start_replicated(
        s: usize,
        w: u32,
        replicas: u32,
        mode: Mode,
        bound: u64,
    ) -> Servers {
        Servers::start_inner(
            s,
            w,
            Credentials::default(),
            Limits {
                max_frame: 1 << 30,
                max_inflight: 1 << 30,
            },
            Some((replicas, mode, bound, LIMIT, &|_, addrs| addrs.to_vec())),
        )
        .await
    }

    /// [`Servers::start_replicated`] with one backup, admitting peers (workers and each other)
    /// with `creds`.
    pub async fn start_replicated_with(
        s: usize,
        w: u32,
        mode: Mode,
        bound: u64,
        creds: Credentials,
    ) -> Servers {
        let limits = Limits {
            max_frame: 1 << 30,
            max_inflight: 1 << 30,
        };
        let peers: &Peers = &|_, addrs| addrs.to_vec();
        Servers::start_inner(s, w, creds, limits, Some((1, mode, bound, LIMIT, peers))).await
    }

    /// [`Servers::start_replicated`] with one backup, giving a backup up after `give_up`; each
    /// server `i` reaches the others where `peers(i, addrs)` says (a proxy, perhaps).
    pub async fn start_replicated_via(
        s: usize,
        w: u32,
        mode: Mode,
        bound: u64,
        give_up: Duration,
        peers: &Peers,
    ) -> Servers {
        let limits = Limits {
            max_frame: 1 << 30,
            max_inflight: 1 << 30,
        };
        let creds = Credentials::default();
        Servers::start_inner(s, w, creds, limits, Some((1, mode, bound, give_up, peers))).await
    }

    /// Starts `s` servers for `w` workers with the given bounds.
    pub async fn start_with(s: usize, w: u32, secret: Option<&[u8]>, limits: Limits) -> Servers {
        Servers::start_inner(s, w, Credentials::secret(secret), limits, None).await
    }

    /// Starts `s` servers for `w` workers that admit peers with `creds` (TLS, say).
    pub async fn start_with_creds(s: usize, w: u32, creds: Credentials) -> Servers {
        let limits = Limits {
            max_frame: 1 << 30,
            max_inflight: 1 << 30,
        };
        Servers::start_inner(s, w, creds, limits, None).await
    }

    async fn start_inner(
        s: usize,
        w: u32,
        creds: Credentials,
        limits: Limits,
        replicas: Option<(u32, Mode, u64, Duration, &Peers)>,
    ) -> Servers {
        Servers::start_on(s, w, creds, limits, replicas, &[]).await
    }

    /// [`Servers::start_replicated`] (one backup) with server `i` on address `ips[i]` (all
    /// loopback addresses: 127.0.0.2 is as local as 127.0.0.1), as if on machines of their own.
    pub async fn start_replicated_on(w: u32, mode: Mode, bound: u64, ips: &[&str]) -> Servers {
        let limits = Limits {
            max_frame: 1 << 30,
            max_inflight: 1 << 30,
        };
        let peers: &Peers = &|_, addrs| addrs.to_vec();
        let replicas = Some((1, mode, bound, LIMIT, peers));
        let creds = Credentials::default();
        Servers::start_on(ips.len(), w, creds, limits, replicas, ips).await
    }

    async fn start_on(
        s: usize,
        w: u32,
        creds: Credentials,
        limits: Limits,
        replicas: Option<(u32, Mode, u64, Duration, &Peers)>,
        ips: &[&str],
    ) -> Servers {
        let mut out = Servers {
            addrs: Vec::new(),
            servers: Vec::new(),
            stops: Vec::new(),
            tasks: Vec::new(),
            creds: creds.clone(),
        };
        let mut listeners = Vec::new();
        for i in 0..s {
            let ip = ips.get(i).copied().unwrap_or("127.0.0.1");
            let tcp = transport::listen(ip.parse().unwrap(), 0).await.unwrap();
            let listener = Listeners::new(tcp, &creds);
            let addr = listener.local_addr().unwrap();
            out.addrs.push((addr, format!("server {i} on {addr}")));
            listeners.push(listener);
        }
        for (i, listener) in listeners.into_iter().enumerate() {
            let (tx, rx) = oneshot::channel::<Option<Farewell>>();
            let server = Arc::new(Server::with_limits(w, limits));
            if let Some((replicas, mode, bound, give_up, peers)) = replicas {
                server.replicate(ReplicaConfig {
                    me: i as u32,
                    servers: peers(i, &out.addrs),
                    replicas,
                    bigarray_bound: bound,
                    creds: creds.clone(),
                    max_frame: limits.max_frame,
                    num_workers: w,
                    mode,
                    give_up,
                });
            }
            let creds = creds.clone();
            let serving = server.clone();
            out.tasks.push(tokio::spawn(async move {
                serving
                    .serve(listener, creds, async { rx.await.ok().flatten() })
                    .await
            }));
            out.servers.push(server);
            out.stops.push(tx);
        }
        out
    }

    /// Starts a server on a new port that replaces server `rank` (lost), keeping `replicas`
    /// backups like the others; `addrs` then names it.
    pub async fn start_replacement(
        &mut self,
        rank: usize,
        w: u32,
        replicas: u32,
        mode: Mode,
        bound: u64,
    ) -> Arc<Server> {
        let tcp = transport::listen("127.0.0.1".parse().unwrap(), 0)
            .await
            .unwrap();
        let listener = Listeners::new(tcp, &self.creds);
        let addr = listener.local_addr().unwrap();
        self.addrs[rank] = (addr, format!("server {rank} on {addr}"));
        let server = Arc::new(Server::with_limits(
            w,
            Limits {
                max_frame: 1 << 30,
                max_inflight: 1 << 30,
            },
        ));
        server.replicate(ReplicaConfig {
            me: rank as u32,
            servers: self.addrs.clone(),
            replicas,
            bigarray_bound: bound,
            creds: self.creds.clone(),
            max_frame: 1 << 30,
            num_workers: w,
            mode,
            give_up: LIMIT,
        });
        let (tx, rx) = oneshot::channel::<Option<Farewell>>();
        let (creds, serving) = (self.creds.clone(), server.clone());
        self.tasks.push(tokio::spawn(async move {
            serving
                .serve(listener, creds, async { rx.await.ok().flatten() })
                .await
        }));
        self.servers.push(server.clone());
        self.stops.push(tx);
        server
    }

    /// The topology `epoch` with `chains`, the servers where `addrs` says.
    pub fn topology(&self, epoch: u64, chains: Vec<Vec<u32>>) -> Topology {
        let servers = self
            .addrs
            .iter()
            .enumerate()
            .map(|(rank, (addr, _))| NodeInfo {
                node_id: rank as u32 + 1,
                role: Role::Server,
                rank: rank as u32,
                host: addr.ip().to_string(),
                port: addr.port(),
            })
            .collect();
        Topology {
            epoch,
            chains,
            servers,
        }
    }

    /// Waits for server `i` to end by itself; returns how its `serve` ended.
    pub async fn ended(&mut self, i: usize) -> ps_core::Result<()> {
        let _stop = self.stops.remove(i); // kept: dropping it stops the server
        self.servers.remove(i);
        within(self.tasks.remove(i)).await.unwrap()
    }

    /// Stops server `i`, which tells its workers `farewell`.
    pub async fn stop_one(&mut self, i: usize, farewell: Farewell) {
        let _ = self.stops.remove(i).send(Some(farewell));
        within(self.tasks.remove(i)).await.unwrap().unwrap();
        self.servers.remove(i);
    }

    /// Server `rank` (its place among those left) fails; the topology of epoch 1 with `chains`
    /// goes to the servers left and to `workers`, as the scheduler would send it.
    pub async fn fail_over(&mut self, rank: usize, chains: Vec<Vec<u32>>, workers: &[Worker]) {
        let bye = Farewell {
            failed: true,
            reason: "stopped by the test".into(),
        };
        self.stop_one(rank, bye).await;
        let lost = self.topology(1, chains);
        for s in &self.servers {
            s.set_topology(&lost).unwrap();
        }
        for w in workers {
            w.set_topology(&lost).await;
        }
    }

    pub fn plane(&self, rank: u32, w: u32, mode: Mode, bound: u64) -> DataPlane {
        DataPlane {
            servers: self.addrs.clone(),
            rank,
            num_workers: w,
            mode,
            bigarray_bound: bound,
            max_frame_bytes: 1 << 30,
            creds: self.creds.clone(),
            rejoined: false,
            local: None,
            replicas: 0,
            wait_notice: None,
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
            let _ = s.send(None);
        }
        for t in self.tasks {
            within(t).await.unwrap().unwrap();
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

/// A hand-driven worker connection.
pub struct Raw {
    pub r: FrameReader<LinkRead>,
    pub w: FrameWriter<LinkWrite>,
    next: u64,
}

impl Raw {
    /// Connects to server 0 as worker `rank` of `num_workers` in dist_sync.
    pub async fn open(servers: &Servers, rank: u64, num_workers: u64) -> Raw {
        Raw::try_open(servers, rank, num_workers, Mode::Sync)
            .await
            .unwrap()
    }

    /// Connects to server 0 and says hello as worker `rank`; the server's answer to it.
    pub async fn try_open(
        servers: &Servers,
        rank: u64,
        num_workers: u64,
        mode: Mode,
    ) -> Result<Raw, PsError> {
        let stream = transport::connect(servers.addrs[0].0, &servers.creds).await?;
        let (r, w) = stream.into_split();
        let mut raw = Raw {
            r: FrameReader::new(r, 1 << 30),
            w: FrameWriter::new(w),
            next: 1,
        };
        let hello = Entry {
            key: rank,
            round: mode.code(),
            count: num_workers,
            ..Entry::new(0, DType::F32, &[], 0, 0)
        };
        let reply = raw.call(Op::Hello, vec![hello]).await.unwrap();
        reply.entries[0].clone().into_result()?;
        Ok(raw)
    }

    /// Sends a request without reading its reply.
    pub async fn send(&mut self, op: Op, entries: Vec<Entry>) {
        self.next += 1;
        self.w
            .write_frame(&Frame::request(op, self.next, entries))
            .await
            .unwrap();
        self.w.flush().await.unwrap();
    }

    /// Sends a request and reads the next frame (its reply, when nothing else is pending).
    pub async fn call(&mut self, op: Op, entries: Vec<Entry>) -> Option<Frame> {
        self.call_frame(Frame::request(op, 0, entries)).await
    }

    /// [`Raw::call`] with a request frame made by the caller (its id is set here).
    pub async fn call_frame(&mut self, mut frame: Frame) -> Option<Frame> {
        self.next += 1;
        frame.request_id = self.next;
        self.w.write_frame(&frame).await.ok()?;
        self.w.flush().await.ok()?;
        within(self.r.read_frame()).await.ok().flatten()
    }
}

pub fn entry(key: u64, shape: &[u64], values: &[f32], round: u64) -> Entry {
    let mut e = Entry::new(key, DType::F32, shape, 0, shape.iter().product());
    e.payload = f32s(values);
    e.round = round;
    e
}

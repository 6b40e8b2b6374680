//! Authenticated TCP for both planes: listeners that hand out only connections which passed the
//! handshake, outgoing connections that run it, and a gRPC channel built on top of them. With
//! TLS ([`Credentials::with_tls`]) every connection is encrypted and both ends show the job's
//! certificates before the handshake runs, inside the encrypted channel.
//!
//! Between two processes of one host (one network namespace) a data-plane connection goes
//! through a Unix socket instead of TCP where the server offers one ([`local_listener`]): the
//! same bytes and handshake with about a third less of the kernel's work per byte (no TCP/IP
//! stack on loopback). On Linux, a server listening on `ip:port` without TLS also listens on
//! the abstract Unix socket named `mxrs-data/ip:port`, which only processes of its network
//! namespace can reach; [`connect`] tries it first and falls back to TCP.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream, unix};
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};
use tonic::transport::{Channel, Endpoint, Uri};

use super::auth;
use super::tls::Tls;
use crate::error::{PsError, Result};

/// What a node proves itself with and asks of its peers: the job's secret (the handshake) and,
/// optionally, TLS. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    secret: Option<Arc<[u8]>>,
    tls: Option<Arc<Tls>>,
}

impl Credentials {
    /// The job's `secret` (None: open mode), no TLS.
    pub fn secret(secret: Option<&[u8]>) -> Credentials {
        Credentials {
            secret: secret.map(Arc::from),
            tls: None,
        }
    }

    /// The same secret, with TLS.
    pub fn with_tls(mut self, tls: Tls) -> Credentials {
        self.tls = Some(Arc::new(tls));
        self
    }

    /// The credentials `cfg` gives (`MXRS_SECRET`, `MXRS_TLS_*`); says once per process when
    /// the job runs without a secret.
    ///
    /// # Errors
    /// [`PsError::Config`] naming the `MXRS_TLS_*` variable that cannot be read or parsed.
    pub fn from_config(cfg: &crate::Config) -> Result<Credentials> {
        auth::warn_if_open(cfg.secret.as_deref());
        let creds = Credentials::secret(cfg.secret.as_deref());
        Ok(match &cfg.tls {
            Some(files) => creds.with_tls(Tls::load(files)?),
            None => creds,
        })
    }

    /// Whether connections are encrypted.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }

    fn secret_bytes(&self) -> Option<&[u8]> {
        self.secret.as_deref()
    }
}

/// A connection that passed the handshake: plain TCP, TLS over TCP, or a Unix socket to a
/// process of the same host.
#[derive(Debug)]
pub enum Link {
    /// Plain TCP.
    Plain(TcpStream),
    /// A Unix socket (plain: only where the job runs without TLS).
    Local(UnixStream),
    /// TLS, accepted by this node.
    Accepted(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    /// TLS, opened by this node.
    Opened(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Link {
    fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Link::Plain(s) => Some(s),
            Link::Local(_) => None,
            Link::Accepted(s) => Some(s.get_ref().0),
            Link::Opened(s) => Some(s.get_ref().0),
        }
    }

    /// The peer's address, or `local` for a process of this host on a Unix socket.
    pub fn peer(&self) -> String {
        match self.tcp().map(TcpStream::peer_addr) {
            Some(Ok(addr)) => addr.to_string(),
            Some(Err(_)) => "?".into(),
            None => "local".into(),
        }
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        !matches!(self, Link::Plain(_) | Link::Local(_))
    }

    /// Whether the connection is a Unix socket to a process of this host.
    pub fn is_local(&self) -> bool {
        matches!(self, Link::Local(_))
    }

    /// Splits the connection into halves that a reader and a writer task own; plain TCP and
    /// Unix sockets keep tokio's lock-free halves.
    pub fn into_split(self) -> (LinkRead, LinkWrite) {
        match self {
            Link::Plain(s) => {
                let (r, w) = s.into_split();
                (LinkRead::Plain(r), LinkWrite::Plain(w))
            }
            Link::Local(s) => {
                let (r, w) = s.into_split();
                (LinkRead::Local(r), LinkWrite::Local(w))
            }
            tls => {
                let (r, w) = tokio::io::split(tls);
                (LinkRead::Tls(r), LinkWrite::Tls(w))
            }
        }
    }
}

/// A peer that closes a TLS connection without TLS's `close_notify` (a process that exits, a
/// dropped connection) reads as the end of the stream, as it does on plain TCP: frames carry
/// their own lengths, so a cut inside one is still seen as a truncated frame.
fn end_of_stream(read: Poll<std::io::Result<()>>) -> Poll<std::io::Result<()>> {
    match read {
        Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Poll::Ready(Ok(())),
        other => other,
    }
}

/// Forwards every `AsyncRead` call of an enum to the variant's stream.
macro_rules! forward_read {
    ($ty:ident { $($variant:ident),+ }) => {
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<std::io::Result<()>> {
                let read = match self.get_mut() {
                    $($ty::$variant(s) => Pin::new(s).poll_read(cx, buf),)+
                };
                end_of_stream(read)
            }
        }
    };
}

/// Forwards every `AsyncWrite` call of an enum to the variant's stream.
macro_rules! forward_write {
    ($ty:ident { $($variant:ident),+ }) => {
        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                match self.get_mut() {
                    $($ty::$variant(s) => Pin::new(s).poll_write(cx, buf),)+
                }
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> Poll<std::io::Result<usize>> {
                match self.get_mut() {
                    $($ty::$variant(s) => Pin::new(s).poll_write_vectored(cx, bufs),)+
                }
            }

            fn is_write_vectored(&self) -> bool {
                match self {
                    $($ty::$variant(s) => s.is_write_vectored(),)+
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                match self.get_mut() {
                    $($ty::$variant(s) => Pin::new(s).poll_flush(cx),)+
                }
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                match self.get_mut() {
                    $($ty::$variant(s) => Pin::new(s).poll_shutdown(cx),)+
                }
            }
        }
    };
}

forward_read!(Link {
    Plain,
    Local,
    Accepted,
    Opened
});
forward_write!(Link {
    Plain,
    Local,
    Accepted,
    Opened
});

/// The reading half of a [`Link`].
#[derive(Debug)]
pub enum LinkRead {
    /// Of plain TCP.
    Plain(OwnedReadHalf),
    /// Of a Unix socket.
    Local(unix::OwnedReadHalf),
    /// Of a TLS connection.
    Tls(ReadHalf<Link>),
}

/// The writing half of a [`Link`].
#[derive(Debug)]
pub enum LinkWrite {
    /// Of plain TCP.
    Plain(OwnedWriteHalf),
    /// Of a Unix socket.
    Local(unix::OwnedWriteHalf),
    /// Of a TLS connection.
    Tls(WriteHalf<Link>),
}

forward_read!(LinkRead { Plain, Local, Tls });
forward_write!(LinkWrite { Plain, Local, Tls });

impl Connected for Link {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match self.tcp() {
            Some(s) => s.connect_info(),
            None => TcpConnectInfo {
                local_addr: None,
                remote_addr: None,
            },
        }
    }
}

/// Binds a listener on `ip:port` (port 0 picks a free one).
pub async fn listen(ip: IpAddr, port: u16) -> Result<TcpListener> {
    TcpListener::bind((ip, port))
        .await
        .map_err(|e| PsError::io(format!("bind {ip}:{port}"), e))
}

/// A server's data-plane listeners: TCP, and beside it the Unix socket for processes of its
/// host ([`local_listener`]). Bound together before the server's address is published, so that
/// no peer that learns the address finds the Unix socket missing and falls back to TCP.
#[derive(Debug)]
pub struct Listeners {
    pub(crate) tcp: TcpListener,
    pub(crate) local: Option<UnixListener>,
}

impl Listeners {
    /// `tcp` and the Unix socket beside it, where `creds` allow one.
    pub fn new(tcp: TcpListener, creds: &Credentials) -> Listeners {
        let local = tcp.local_addr().ok().and_then(|a| local_listener(a, creds));
        Listeners { tcp, local }
    }

    /// The TCP listener's address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// The name of the abstract Unix socket a server listening on `addr` offers to processes of
/// its host: `mxrs-data/ip:port`.
fn local_name(addr: SocketAddr) -> String {
    format!("mxrs-data/{addr}")
}

/// The abstract Unix socket `name`.
#[cfg(target_os = "linux")]
fn local_addr(name: &str) -> std::io::Result<unix::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).map(unix::SocketAddr::from)
}

/// The Unix socket beside a server's TCP listener on `addr` for processes of its host, where
/// one can be had: on Linux, for a listener on one address (not a wildcard), without TLS.
/// None elsewhere, or when the name is taken (then every peer connects over TCP).
pub fn local_listener(addr: SocketAddr, creds: &Credentials) -> Option<UnixListener> {
    if creds.uses_tls() || addr.ip().is_unspecified() {
        return None;
    }
    #[cfg(target_os = "linux")]
    {
        let bound = local_addr(&local_name(addr)).and_then(|a| UnixListener::bind_addr(&a));
        match bound {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::debug!("no local socket beside {addr}: {e}");
                None
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// The Unix socket of the server at `addr` when it is a process of this host that offers one
/// ([`local_listener`]); None otherwise (also when its backlog is full: the connect does not
/// wait), at the cost of one failed `connect` call.
async fn connect_local(addr: SocketAddr) -> Option<UnixStream> {
    #[cfg(target_os = "linux")]
    {
        let a = local_addr(&local_name(addr)).ok()?;
        UnixStream::connect_addr(&a).await.ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = addr;
        None
    }
}

/// Opens a connection to `addr` and runs the handshake (TLS first when `creds` have it):
/// through the server's Unix socket when it is a process of this host that offers one, over
/// TCP (with `TCP_NODELAY`) otherwise.
pub async fn connect(addr: SocketAddr, creds: &Credentials) -> Result<Link> {
    if !creds.uses_tls()
        && let Some(mut stream) = connect_local(addr).await
    {
        auth::connect(&mut stream, creds.secret_bytes()).await?;
        return Ok(Link::Local(stream));
    }
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| PsError::io(format!("connect to {addr}"), e))?;
    stream
        .set_nodelay(true)
        .map_err(|e| PsError::io("set TCP_NODELAY", e))?;
    let Some(tls) = &creds.tls else {
        auth::connect(&mut stream, creds.secret_bytes()).await?;
        return Ok(Link::Plain(stream));
    };
    auth::expect_tls(&mut stream).await?;
    let mut link = tls.connect(stream).await?;
    auth::connect(&mut link, creds.secret_bytes()).await?;
    Ok(Link::Opened(Box::new(link)))
}

/// The accepting side of [`connect`].
async fn accept(stream: Accepted, creds: &Credentials) -> Result<Link> {
    let mut stream = match stream {
        Accepted::Tcp(s) => s,
        Accepted::Local(_) if creds.uses_tls() => {
            return Err(PsError::Auth(
                "a Unix socket in a job with TLS (it offers none)".into(),
            ));
        }
        Accepted::Local(mut s) => {
            auth::accept(&mut s, creds.secret_bytes()).await?;
            return Ok(Link::Local(s));
        }
    };
    let Some(tls) = &creds.tls else {
        auth::accept(&mut stream, creds.secret_bytes()).await?;
        return Ok(Link::Plain(stream));
    };
    auth::offer_tls(&mut stream).await?;
    let mut link = tls.accept(stream).await?;
    auth::accept(&mut link, creds.secret_bytes()).await?;
    Ok(Link::Accepted(Box::new(link)))
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
    creds: Credentials,
    refused: Counter,
) -> ReceiverStream<std::io::Result<Link>> {
    authenticated_with_local(listener, None, creds, refused)
}

/// Like [`authenticated`], with the connections of `local` too (a server's Unix socket for
/// processes of its host, [`local_listener`]), under one budget of pending handshakes.
pub fn authenticated_with_local(
    listener: TcpListener,
    local: Option<UnixListener>,
    creds: Credentials,
    refused: Counter,
) -> ReceiverStream<std::io::Result<Link>> {
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
            let (stream, peer) = tokio::select! {
                accepted = next(&listener, local.as_ref()) => match accepted {
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
            let creds = creds.clone();
            let refused = refused.clone();
            tokio::spawn(async move {
                let handshake = tokio::select! {
                    r = accept(stream, &creds) => r,
                    _ = tx.closed() => return,
                };
                drop(permit);
                match handshake {
                    Ok(link) => {
                        tracing::debug!("accepted connection from {peer}");
                        let _ = tx.send(Ok(link)).await;
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

/// A connection accepted but not yet authenticated.
enum Accepted {
    Tcp(TcpStream),
    Local(UnixStream),
}

/// The next connection on either listener (both accepts are cancel-safe), and who it is from.
async fn next(
    tcp: &TcpListener,
    local: Option<&UnixListener>,
) -> std::io::Result<(Accepted, String)> {
    let over_tcp = async {
        let (s, peer) = tcp.accept().await?;
        let _ = s.set_nodelay(true);
        Ok((Accepted::Tcp(s), peer.to_string()))
    };
    let Some(local) = local else {
        return over_tcp.await;
    };
    tokio::select! {
        r = over_tcp => r,
        r = local.accept() => r.map(|(s, _)| (Accepted::Local(s), "a local process".into())),
    }
}

/// A gRPC channel to `addr` whose every connection runs the handshake first.
///
/// # Errors
/// [`PsError::Auth`] when the handshake fails (a different secret, or not an mxrs node);
/// [`PsError::Rpc`] when `addr` cannot be reached.
pub async fn grpc_channel(addr: SocketAddr, creds: Credentials) -> Result<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| PsError::Rpc(format!("bad scheduler address {addr}: {e}")))?;
    let connector = tower::service_fn(move |_: Uri| {
        let creds = creds.clone();
        async move {
            connect(addr, &creds)
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

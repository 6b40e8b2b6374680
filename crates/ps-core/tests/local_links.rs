//! Data-plane connections between processes of one host go through the server's Unix socket:
//! what a worker sends arrives whole, the job's secret is still checked there, a server
//! without one (a wildcard address, TLS) is reached over TCP, and a job whose every link is
//! local computes what it computes over TCP.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use ps_core::protocol::transport::{self, Credentials, Link};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_stream::StreamExt;

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

/// A server-side listener on `ip` with its Unix socket where it gets one: its address, the
/// connections it hands out, how many it refused, and whether it offers a local socket.
async fn listening(
    ip: &str,
    creds: Credentials,
) -> (
    std::net::SocketAddr,
    tokio_stream::wrappers::ReceiverStream<std::io::Result<Link>>,
    Counter,
    bool,
) {
    let listener = transport::listen(ip.parse().unwrap(), 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let local = transport::local_listener(addr, &creds);
    let offered = local.is_some();
    let refused = Counter::default();
    let incoming = transport::authenticated_with_local(listener, local, creds, refused.clone());
    (addr, incoming, refused, offered)
}

#[tokio::test]
async fn a_peer_of_the_same_host_connects_through_the_unix_socket() {
    let creds = Credentials::secret(Some(b"k"));
    let (addr, mut incoming, refused, offered) = listening("127.0.0.1", creds.clone()).await;
    assert!(offered, "no Unix socket beside {addr}");
    let mut opened = within(transport::connect(addr, &creds)).await.unwrap();
    let mut accepted = within(incoming.next()).await.unwrap().unwrap();
    assert!(opened.is_local() && accepted.is_local());
    assert!(!opened.is_tls());
    assert_eq!(accepted.peer(), "local");
    // bytes both ways, more than a socket buffer holds
    let sent: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let expect = sent.clone();
    let writer = tokio::spawn(async move {
        opened.write_all(&sent).await.unwrap();
        opened.flush().await.unwrap();
        let mut back = [0u8; 4];
        opened.read_exact(&mut back).await.unwrap();
        back
    });
    let mut got = vec![0u8; expect.len()];
    within(accepted.read_exact(&mut got)).await.unwrap();
    assert!(got == expect, "the bytes arrived changed");
    accepted.write_all(b"done").await.unwrap();
    assert_eq!(&within(writer).await.unwrap(), b"done");
    assert_eq!(refused.get(), 0);
}

#[tokio::test]
async fn the_secret_is_checked_on_the_unix_socket_too() {
    let (addr, _incoming, refused, offered) =
        listening("127.0.0.1", Credentials::secret(Some(b"right"))).await;
    assert!(offered);
    let e = within(transport::connect(
        addr,
        &Credentials::secret(Some(b"wrong")),
    ))
    .await
    .unwrap_err();
    assert!(e.to_string().contains("MXRS_SECRET"), "{e}");
    within(async {
        while refused.get() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(refused.get(), 1);
}

#[tokio::test]
async fn a_server_on_a_wildcard_address_is_reached_over_tcp() {
    let creds = Credentials::secret(Some(b"k"));
    let (addr, mut incoming, _, offered) = listening("0.0.0.0", creds.clone()).await;
    assert!(
        !offered,
        "a socket named for 0.0.0.0 would not be found by its peers"
    );
    let target = std::net::SocketAddr::new("127.0.0.1".parse().unwrap(), addr.port());
    let opened = within(transport::connect(target, &creds)).await.unwrap();
    let accepted = within(incoming.next()).await.unwrap().unwrap();
    assert!(!opened.is_local() && !accepted.is_local());
    assert!(
        accepted.peer().starts_with("127.0.0.1:"),
        "{}",
        accepted.peer()
    );
}

#[tokio::test]
async fn a_listener_without_a_unix_socket_is_reached_over_tcp() {
    // the scheduler's listener: TCP only
    let listener = transport::listen("127.0.0.1".parse().unwrap(), 0)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let creds = Credentials::secret(None);
    let mut incoming = transport::authenticated(listener, creds.clone(), Counter::default());
    let opened = within(transport::connect(addr, &creds)).await.unwrap();
    let accepted = within(incoming.next()).await.unwrap().unwrap();
    assert!(!opened.is_local() && !accepted.is_local());
}

#[test]
fn a_name_is_taken_once_per_address() {
    // a second listener for the same address (a port given up and taken again while the old
    // socket lives) goes without: its peers use TCP
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let creds = Credentials::secret(None);
        let listener = transport::listen("127.0.0.1".parse().unwrap(), 0)
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let first = transport::local_listener(addr, &creds);
        assert!(first.is_some());
        assert!(transport::local_listener(addr, &creds).is_none());
        drop(first);
        assert!(transport::local_listener(addr, &creds).is_some());
    });
}

use std::net::SocketAddr;

use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_stream::StreamExt;

use super::*;
use crate::protocol::transport::{self, Credentials, Link};

/// The credentials of one node of `ca`'s job, with `secret`.
fn node(ca: &JobCa, label: &str, secret: &[u8]) -> Credentials {
    Credentials::secret(Some(secret)).with_tls(ca.tls_for(label).unwrap())
}

fn hour() -> Duration {
    Duration::from_secs(3600)
}

/// A listener admitting peers with `creds`: its address, the connections it hands out and how
/// many it refused.
async fn listening(
    creds: Credentials,
) -> (
    SocketAddr,
    tokio_stream::wrappers::ReceiverStream<std::io::Result<Link>>,
    Counter,
) {
    let listener = transport::listen("127.0.0.1".parse().unwrap(), 0)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let refused = Counter::default();
    let incoming = transport::authenticated(listener, creds, refused.clone());
    (addr, incoming, refused)
}

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

/// Waits until the listener has counted one refused connection.
async fn refused_once(refused: &Counter) {
    within(async {
        while refused.get() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(refused.get(), 1);
}

#[tokio::test]
async fn nodes_of_one_job_talk_encrypted() {
    let ca = JobCa::new("t", hour()).unwrap();
    let (addr, mut incoming, _) = listening(node(&ca, "server 0", b"k")).await;
    let mut opened = within(transport::connect(addr, &node(&ca, "worker 0", b"k")))
        .await
        .unwrap();
    let mut accepted = within(incoming.next()).await.unwrap().unwrap();
    assert!(opened.is_tls() && accepted.is_tls());
    opened.write_all(b"gradients").await.unwrap();
    opened.flush().await.unwrap();
    let mut got = [0u8; 9];
    within(accepted.read_exact(&mut got)).await.unwrap();
    assert_eq!(&got, b"gradients");
    // Split halves carry it the other way round.
    let (mut r, _w) = opened.into_split();
    let (mut rest_r, mut w) = accepted.into_split();
    w.write_all(b"weights").await.unwrap();
    w.flush().await.unwrap();
    let mut got = [0u8; 7];
    within(r.read_exact(&mut got)).await.unwrap();
    assert_eq!(&got, b"weights");
    // A peer that goes without TLS's close_notify reads as the end of the stream, as on TCP.
    drop((r, _w));
    let mut rest = Vec::new();
    assert_eq!(within(rest_r.read_to_end(&mut rest)).await.unwrap(), 0);
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused_both_ways() {
    let ca = JobCa::new("t", hour()).unwrap();
    let other = JobCa::new("other", hour()).unwrap();
    // Another job's node connecting: the acceptor refuses it, the connector hears why.
    let (addr, _incoming, refused) = listening(node(&ca, "server 0", b"k")).await;
    let e = within(transport::connect(addr, &node(&other, "worker 0", b"k")))
        .await
        .unwrap_err();
    assert!(matches!(&e, PsError::Auth(m) if m.contains("TLS")), "{e}");
    refused_once(&refused).await;
    // A node connecting to another job's server: it refuses the server's certificate.
    let (addr, _incoming, refused) = listening(node(&other, "server 0", b"k")).await;
    let e = within(transport::connect(addr, &node(&ca, "worker 0", b"k")))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("certificate") && m.contains("UnknownIssuer")),
        "{e}"
    );
    refused_once(&refused).await;
}

#[tokio::test]
async fn an_expired_certificate_is_refused() {
    let now = time::OffsetDateTime::now_utc();
    let ca = JobCa::with_validity(
        "old",
        now - time::Duration::days(2),
        now - time::Duration::days(1),
    )
    .unwrap();
    let fresh = JobCa::new("t", hour()).unwrap();
    // The server's certificate expired: the connecting node says so.
    let (addr, _incoming, refused) = listening(node(&ca, "server 0", b"k")).await;
    let e = within(transport::connect(addr, &node(&ca, "worker 0", b"k")))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("Expired")),
        "{e}"
    );
    refused_once(&refused).await;
    // A node whose own certificate expired is refused by a server of its job with a valid one.
    let (addr, _incoming, refused) = listening(node(&fresh, "server 0", b"k")).await;
    let n = fresh
        .node_valid(
            "worker 0",
            &[],
            now - time::Duration::days(2),
            now - time::Duration::days(1),
        )
        .unwrap();
    let pem = fresh.cert_pem();
    let tls = Tls::from_pem(n.cert.as_bytes(), n.key.as_bytes(), pem.as_bytes()).unwrap();
    let stale = Credentials::secret(Some(b"k")).with_tls(tls);
    let e = within(transport::connect(addr, &stale)).await.unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("refused this node's certificate (CertificateExpired)")),
        "{e}"
    );
    refused_once(&refused).await;
}

#[tokio::test]
async fn plain_and_tls_nodes_say_what_is_wrong_at_once() {
    let ca = JobCa::new("t", hour()).unwrap();
    let (addr, _incoming, refused) = listening(node(&ca, "server 0", b"k")).await;
    let plain = Credentials::secret(Some(b"k"));
    let e = within(transport::connect(addr, &plain)).await.unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("requires TLS")),
        "{e}"
    );
    refused_once(&refused).await;

    let (addr, _incoming, refused) = listening(plain).await;
    let e = within(transport::connect(addr, &node(&ca, "worker 0", b"k")))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("does not use TLS")),
        "{e}"
    );
    refused_once(&refused).await;
}

#[tokio::test]
async fn the_secret_is_still_checked_inside_tls() {
    let ca = JobCa::new("t", hour()).unwrap();
    let (addr, _incoming, refused) = listening(node(&ca, "server 0", b"k")).await;
    let e = within(transport::connect(addr, &node(&ca, "worker 0", b"other")))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("MXRS_SECRET")),
        "{e}"
    );
    refused_once(&refused).await;
}

#[test]
fn bad_material_names_the_variable() {
    let ca = JobCa::new("t", hour()).unwrap();
    let n = ca.node("worker 0", &[]).unwrap();
    let other = ca.node("worker 1", &[]).unwrap();
    let ca_pem = ca.cert_pem();
    type Case<'a> = (&'a [u8], &'a [u8], &'a [u8], &'static str);
    let cases: [Case; 4] = [
        (
            b"junk",
            n.key.as_bytes(),
            ca_pem.as_bytes(),
            "MXRS_TLS_CERT",
        ),
        (
            n.cert.as_bytes(),
            b"junk",
            ca_pem.as_bytes(),
            "MXRS_TLS_KEY",
        ),
        (n.cert.as_bytes(), n.key.as_bytes(), b"", "MXRS_TLS_CA"),
        // The key of another certificate.
        (
            n.cert.as_bytes(),
            other.key.as_bytes(),
            ca_pem.as_bytes(),
            "MXRS_TLS_KEY",
        ),
    ];
    for (cert, key, ca, var) in cases {
        let e = Tls::from_pem(cert, key, ca).unwrap_err();
        assert!(
            matches!(&e, PsError::Config { var: v, .. } if v == var),
            "{var}: {e}"
        );
    }
    // PEM given inline, on one line, is as good as a file.
    let one_line = |pem: &str| pem.trim_end().replace('\n', "\\n");
    let inline = TlsFiles {
        cert: one_line(&n.cert),
        key: one_line(&n.key),
        ca: one_line(&ca_pem),
        name: None,
    };
    assert!(!inline.cert.contains('\n'));
    Tls::load(&inline).unwrap();
    let files = TlsFiles {
        cert: "/nonexistent/cert.pem".into(),
        key: n.key.clone(),
        ca: ca_pem,
        name: None,
    };
    let e = Tls::load(&files).unwrap_err();
    assert!(
        matches!(&e, PsError::Config { var, reason } if var == "MXRS_TLS_CERT" && reason.contains("/nonexistent/cert.pem")),
        "{e}"
    );
}

#[tokio::test]
async fn a_ca_of_ones_own_names_its_nodes_as_it_likes() {
    let ca = JobCa::new("t", hour()).unwrap();
    // A server certificate naming only ps.example.org (no `mxrs`), as another PKI would.
    let n = ca
        .node_named("server 0", &["ps.example.org".into()])
        .unwrap();
    let pem = ca.cert_pem();
    let server = Tls::from_pem(n.cert.as_bytes(), n.key.as_bytes(), pem.as_bytes()).unwrap();
    let (addr, _incoming, refused) =
        listening(Credentials::secret(Some(b"k")).with_tls(server)).await;
    // Asked for `mxrs`, the connecting node refuses it ...
    let e = within(transport::connect(addr, &node(&ca, "worker 0", b"k")))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PsError::Auth(m) if m.contains("NotValidForName")),
        "{e}"
    );
    refused_once(&refused).await;
    // ... asked for the name it carries (MXRS_TLS_NAME), it accepts it.
    let tls = ca
        .tls_for("worker 0")
        .unwrap()
        .expecting("ps.example.org")
        .unwrap();
    let worker = Credentials::secret(Some(b"k")).with_tls(tls);
    within(transport::connect(addr, &worker)).await.unwrap();
    let e = ca
        .tls_for("w")
        .unwrap()
        .expecting("not a name!")
        .unwrap_err();
    assert!(
        matches!(&e, PsError::Config { var, .. } if var == "MXRS_TLS_NAME"),
        "{e}"
    );
}

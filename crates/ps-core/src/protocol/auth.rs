//! Shared-secret handshake that opens every connection, data plane and control plane alike.
//!
//! The accepting side speaks first and reads nothing but the handshake until the peer has proven
//! it knows the job's secret (`MXRS_SECRET`); the secret itself never crosses the wire:
//!
//! ```text
//! acceptor -> "MXRS" version:u8 nonce_a:[32]
//! connector -> nonce_c:[32] HMAC-SHA256(secret, "mxrs-connector" | nonce_a | nonce_c)
//! acceptor -> HMAC-SHA256(secret, "mxrs-acceptor" | nonce_c | nonce_a)
//! ```
//! Both sides check the other's MAC, so neither talks to an impostor. Without a secret the key is
//! empty: nodes still interoperate, and [`warn_if_open`] says so once per process.
//!
//! A node with TLS (`super::tls`) opens with `"MXRS" (0x80 | version)` alone instead: the
//! connector answers with TLS's ClientHello, and the exchange above then runs inside the
//! encrypted channel. A node without TLS that meets one with it (or the other way round) says so
//! at once rather than waiting for bytes that never come.

use std::sync::Once;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::{PsError, Result};

const MAGIC: &[u8; 4] = b"MXRS";
const VERSION: u8 = 1;
/// The opening's version byte when TLS follows.
const TLS_VERSION: u8 = 0x80 | VERSION;
const NONCE: usize = 32;
const MAC: usize = 32;
/// How long a peer has to complete the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], label: &[u8], first: &[u8], second: &[u8]) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    m.update(label);
    m.update(first);
    m.update(second);
    m
}

fn nonce() -> [u8; NONCE] {
    rand::random()
}

/// Logs once per process that the job runs in open mode, and what that lets others do.
pub fn warn_if_open(secret: Option<&[u8]>) {
    static ONCE: Once = Once::new();
    if secret.is_none() {
        ONCE.call_once(|| {
            tracing::warn!(
                "MXRS_SECRET is not set: the job runs in open mode; any process that can reach \
                 this node's ports can join the job, read and change the weights (set \
                 MXRS_SECRET, or use mxrs-launch, which sets one)"
            )
        });
    }
}

/// Runs the accepting side of the handshake on `stream`.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    secret: Option<&[u8]>,
) -> Result<()> {
    with_timeout(accept_inner(stream, secret.unwrap_or_default())).await
}

/// Runs the connecting side of the handshake on `stream`.
pub async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    secret: Option<&[u8]>,
) -> Result<()> {
    with_timeout(connect_inner(stream, secret.unwrap_or_default())).await
}

/// The accepting side's opening when TLS follows: the magic and [`TLS_VERSION`], nothing else.
pub async fn offer_tls<S: AsyncWrite + Unpin>(stream: &mut S) -> Result<()> {
    let mut opening = [0u8; 5];
    opening[..4].copy_from_slice(MAGIC);
    opening[4] = TLS_VERSION;
    with_timeout(async {
        stream.write_all(&opening).await.map_err(closed)?;
        stream.flush().await.map_err(closed)
    })
    .await
}

/// The connecting side of a TLS connection, before TLS: reads the acceptor's opening, which
/// must offer TLS.
pub async fn expect_tls<S: AsyncRead + Unpin>(stream: &mut S) -> Result<()> {
    match with_timeout(read_opening(stream)).await? {
        true => Ok(()),
        false => Err(PsError::Auth(
            "the peer does not use TLS and this node does: give every node of the job \
             MXRS_TLS_CERT, MXRS_TLS_KEY and MXRS_TLS_CA, or none"
                .into(),
        )),
    }
}

/// Reads the acceptor's first five bytes: whether TLS follows.
async fn read_opening<S: AsyncRead + Unpin>(s: &mut S) -> Result<bool> {
    let mut opening = [0u8; 5];
    s.read_exact(&mut opening).await.map_err(closed)?;
    if &opening[..4] != MAGIC {
        return Err(PsError::Auth("the peer is not an mxrs node".into()));
    }
    match opening[4] {
        VERSION => Ok(false),
        TLS_VERSION => Ok(true),
        v => Err(PsError::Auth(format!(
            "the peer speaks handshake version {}, this node {VERSION}",
            v & 0x7f
        ))),
    }
}

pub(crate) async fn with_timeout<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, f).await {
        Ok(r) => r,
        Err(_) => Err(PsError::Auth(format!(
            "the peer did not complete the handshake within {HANDSHAKE_TIMEOUT:?}"
        ))),
    }
}

fn closed(e: std::io::Error) -> PsError {
    if let Some(why) = super::tls::refusal(&e) {
        // Under TLS 1.3 the peer checks this node's certificate after this node's side of the
        // TLS handshake is done: its verdict arrives as an alert here.
        return PsError::Auth(format!("TLS: {why}"));
    }
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        PsError::Auth(
            "the peer closed the connection during the handshake (is MXRS_SECRET the same \
             on every node of the job, and MXRS_TLS_* given to all or none?)"
                .into(),
        )
    } else {
        PsError::io("handshake", e)
    }
}

async fn accept_inner<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, secret: &[u8]) -> Result<()> {
    let ours = nonce();
    let mut hello = Vec::with_capacity(MAGIC.len() + 1 + NONCE);
    hello.extend_from_slice(MAGIC);
    hello.push(VERSION);
    hello.extend_from_slice(&ours);
    s.write_all(&hello).await.map_err(closed)?;
    s.flush().await.map_err(closed)?;

    let mut answer = [0u8; NONCE + MAC];
    s.read_exact(&mut answer).await.map_err(closed)?;
    let (theirs, their_mac) = answer.split_at(NONCE);
    mac(secret, b"mxrs-connector", &ours, theirs)
        .verify_slice(their_mac)
        .map_err(|_| PsError::Auth("the peer does not know the job's secret".into()))?;

    let proof = mac(secret, b"mxrs-acceptor", theirs, &ours)
        .finalize()
        .into_bytes();
    s.write_all(&proof).await.map_err(closed)?;
    s.flush().await.map_err(closed)?;
    Ok(())
}

async fn connect_inner<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, secret: &[u8]) -> Result<()> {
    if read_opening(s).await? {
        return Err(PsError::Auth(
            "the peer requires TLS: give this node MXRS_TLS_CERT, MXRS_TLS_KEY and MXRS_TLS_CA \
             (mxrs-launch --tls makes them for a job)"
                .into(),
        ));
    }
    let mut theirs = [0u8; NONCE];
    s.read_exact(&mut theirs).await.map_err(closed)?;
    let theirs = &theirs[..];
    let ours = nonce();
    let proof = mac(secret, b"mxrs-connector", theirs, &ours)
        .finalize()
        .into_bytes();
    let mut answer = Vec::with_capacity(NONCE + MAC);
    answer.extend_from_slice(&ours);
    answer.extend_from_slice(&proof);
    s.write_all(&answer).await.map_err(closed)?;
    s.flush().await.map_err(closed)?;

    let mut their_mac = [0u8; MAC];
    s.read_exact(&mut their_mac).await.map_err(closed)?;
    mac(secret, b"mxrs-acceptor", &ours, theirs)
        .verify_slice(&their_mac)
        .map_err(|_| PsError::Auth("the peer does not know the job's secret".into()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn pair(a: Option<&[u8]>, c: Option<&[u8]>) -> (Result<()>, Result<()>) {
        let (mut x, mut y) = tokio::io::duplex(1024);
        let (ra, rc) = tokio::join!(
            async {
                let r = accept(&mut x, a).await;
                drop(x);
                r
            },
            async {
                let r = connect(&mut y, c).await;
                drop(y);
                r
            }
        );
        (ra, rc)
    }

    #[tokio::test]
    async fn same_secret_passes() {
        let (a, c) = pair(Some(b"k"), Some(b"k")).await;
        a.unwrap();
        c.unwrap();
        let (a, c) = pair(None, None).await;
        a.unwrap();
        c.unwrap();
    }

    #[tokio::test]
    async fn wrong_or_missing_secret_fails_both_sides() {
        for (a, c) in [
            (Some(&b"k"[..]), Some(&b"other"[..])),
            (Some(b"k"), None),
            (None, Some(b"k")),
        ] {
            let (ra, rc) = pair(a, c).await;
            assert!(matches!(ra, Err(PsError::Auth(_))), "{ra:?}");
            assert!(matches!(rc, Err(PsError::Auth(_))), "{rc:?}");
        }
    }

    #[tokio::test]
    async fn garbage_is_refused() {
        let (mut x, mut y) = tokio::io::duplex(1024);
        let acceptor = tokio::spawn(async move { accept(&mut x, Some(b"k")).await });
        y.write_all(&[0x47; 200]).await.unwrap();
        let r = acceptor.await.unwrap();
        assert!(matches!(r, Err(PsError::Auth(m)) if m.contains("secret")));
    }

    #[tokio::test(start_paused = true)]
    async fn silent_peer_times_out() {
        let (mut x, _y) = tokio::io::duplex(1024);
        let r = accept(&mut x, Some(b"k")).await;
        assert!(matches!(r, Err(PsError::Auth(m)) if m.contains("did not complete")));
    }
}

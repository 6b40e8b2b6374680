//! Mutual TLS on the data plane and the replication links: in-process servers and workers on
//! 127.0.0.1 train to the same numbers as without TLS, a peer of another job is refused while
//! the others carry on, and what crosses the wire shows none of the values.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use ps_core::protocol::frame::Mode;
use ps_core::protocol::tls::JobCa;
use ps_core::protocol::transport::Credentials;
use ps_core::worker::Worker;
use ps_core::{DType, PsError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The credentials of a node of `ca`'s job.
fn node(ca: &JobCa, label: &str) -> Credentials {
    Credentials::secret(Some(b"job-secret")).with_tls(ca.tls_for(label).unwrap())
}

fn job_ca() -> JobCa {
    JobCa::new("test", Duration::from_secs(3600)).unwrap()
}

/// Two workers' rounds of pushpull on two servers (key 2 sliced over both), the values each
/// worker got back, round by round.
async fn train(planes: [ps_core::worker::DataPlane; 2]) -> Vec<Vec<f32>> {
    let mut workers = Vec::new();
    for p in planes {
        workers.push(within(Worker::connect(p)).await.unwrap());
    }
    for w in &workers {
        let items = vec![
            (1, DType::F32, vec![3], f32s(&[0.0; 3])),
            (2, DType::F32, vec![64], f32s(&[0.0; 64])),
        ];
        within(w.init(items).wait()).await.unwrap();
    }
    let mut got = Vec::new();
    for round in 0..4 {
        let tickets: Vec<_> = workers
            .iter()
            .enumerate()
            .map(|(r, w)| {
                let g = (r as f32 + 1.0) * 0.25 + round as f32;
                w.pushpull(vec![
                    (1, DType::F32, f32s(&[g; 3])),
                    (
                        2,
                        DType::F32,
                        f32s(&(0..64).map(|i| g * i as f32).collect::<Vec<_>>()),
                    ),
                ])
            })
            .collect();
        for t in tickets {
            let v = within(t.wait()).await.unwrap();
            got.push(v.iter().flat_map(|b| to_f32(b)).collect());
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_tls_computes_what_a_plain_one_does() {
    let plain = Servers::start(2, 2, Some(b"job-secret")).await;
    let expected = train([0, 1].map(|r| plain.plane(r, 2, Mode::Sync, 16))).await;
    plain.stop().await;

    let ca = job_ca();
    let servers = Servers::start_with_creds(2, 2, node(&ca, "server")).await;
    let planes = [0, 1].map(|r| {
        let mut p = servers.plane(r, 2, Mode::Sync, 16);
        p.creds = node(&ca, &format!("worker {r}"));
        p
    });
    assert_eq!(train(planes).await, expected);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_of_another_job_is_refused_and_the_others_carry_on() {
    let ca = job_ca();
    let servers = Servers::start_with_creds(1, 1, node(&ca, "server 0")).await;
    for intruder in [
        node(&job_ca(), "worker 0"),
        Credentials::secret(Some(b"job-secret")),
    ] {
        let mut p = servers.plane(0, 1, Mode::Sync, 1000);
        p.creds = intruder;
        let e = within(Worker::connect(p)).await.err().unwrap();
        assert!(matches!(e, PsError::Auth(_)), "{e}");
    }
    let mut p = servers.plane(0, 1, Mode::Sync, 1000);
    p.creds = node(&ca, "worker 0");
    let w = within(Worker::connect(p)).await.unwrap();
    within(
        w.init(vec![(7, DType::F32, vec![2], f32s(&[1.0, 2.0]))])
            .wait(),
    )
    .await
    .unwrap();
    let v = within(w.pull(&[7]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [1.0, 2.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_replicate_over_tls_and_serve_after_a_loss() {
    let ca = job_ca();
    let mut servers =
        Servers::start_replicated_with(2, 1, Mode::Sync, 4, node(&ca, "server")).await;
    let mut p = servers.plane(0, 1, Mode::Sync, 4);
    p.replicas = 1;
    p.creds = node(&ca, "worker 0");
    let w = within(Worker::connect(p)).await.unwrap();
    within(
        w.init(vec![(1, DType::F32, vec![8], f32s(&[0.0; 8]))])
            .wait(),
    )
    .await
    .unwrap();
    for _ in 0..3 {
        within(w.pushpull(vec![(1, DType::F32, f32s(&[0.5; 8]))]).wait())
            .await
            .unwrap();
    }
    servers
        .fail_over(0, vec![vec![1], vec![1]], std::slice::from_ref(&w))
        .await;
    let v = within(w.pull(&[1]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [0.5; 8]);
}

/// A TCP relay on 127.0.0.1 to `dest` that keeps every byte it carries, both ways.
async fn recording_relay(dest: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<u8>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let Ok(outbound) = tokio::net::TcpStream::connect(dest).await else {
                return;
            };
            let (ir, iw) = inbound.into_split();
            let (or, ow) = outbound.into_split();
            for (mut from, mut to) in [(ir, ow), (or, iw)].map(|(r, w)| (r, w)) {
                let record = record.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 1 << 16];
                    while let Ok(n @ 1..) = from.read(&mut buf).await {
                        record.lock().unwrap().extend_from_slice(&buf[..n]);
                        if to.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        }
    });
    (addr, seen)
}

/// The bytes a worker and a server exchange for one push and pull of a key whose values spell
/// out a marker, as captured between them.
async fn captured(server_creds: Credentials, worker_creds: Credentials) -> Vec<u8> {
    let servers = Servers::start_with_creds(1, 1, server_creds).await;
    let (relay, seen) = recording_relay(servers.addrs[0].0).await;
    let mut p = servers.plane(0, 1, Mode::Sync, 1 << 20);
    p.servers = vec![(relay, "server 0 through the relay".into())];
    p.creds = worker_creds;
    let w = within(Worker::connect(p)).await.unwrap();
    let marker: Vec<f32> = (0..256).map(|i| 1234.5 + i as f32).collect();
    within(
        w.init(vec![(3, DType::F32, vec![256], f32s(&marker))])
            .wait(),
    )
    .await
    .unwrap();
    let v = within(w.pull(&[3]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), marker);
    drop(w);
    servers.stop().await;
    seen.lock().unwrap().clone()
}

/// Whether `hay` holds 16 consecutive bytes of the marker's values.
fn shows_marker(hay: &[u8]) -> bool {
    let needle: Vec<u8> = (0..4u32)
        .flat_map(|i| (1234.5 + 100.0 + i as f32).to_le_bytes())
        .collect();
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wire_shows_no_values_under_tls() {
    // Without TLS the capture holds the values: the check can see them when they are there.
    let plain = Credentials::secret(Some(b"job-secret"));
    let bytes = captured(plain.clone(), plain).await;
    assert!(shows_marker(&bytes), "{} bytes captured", bytes.len());

    let ca = job_ca();
    let bytes = captured(node(&ca, "server 0"), node(&ca, "worker 0")).await;
    assert!(bytes.len() > 2 * 256 * 4, "{} bytes captured", bytes.len());
    assert!(!shows_marker(&bytes));
}

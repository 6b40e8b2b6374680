//! Bad input on the data plane: wrong shapes, unknown keys, garbage, wrong secrets. The sender
//! gets an error naming the key (or its connection is closed), nothing stored changes, and the
//! other workers carry on.

mod common;

use common::*;
use ps_core::protocol::frame::{Frame, Mode, Op};
use ps_core::protocol::transport::{self, Credentials};
use ps_core::worker::Worker;
use ps_core::{DType, PsError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_shape_and_unknown_key_are_named_and_change_nothing() {
    let servers = Servers::start(1, 2, None).await;
    let w0 = within(Worker::connect(servers.plane(0, 2, Mode::Sync, 1000)))
        .await
        .unwrap();
    let mut raw = Raw::open(&servers, 1, 2).await;
    within(
        w0.init(vec![(4, DType::F32, vec![3], f32s(&[1.0, 2.0, 3.0]))])
            .wait(),
    )
    .await
    .unwrap();
    raw.call(Op::Init, vec![entry(4, &[3], &[], 0)])
        .await
        .unwrap();

    // A push shaped [2, 2] into a key of shape [3].
    let reply = raw
        .call(Op::Push, vec![entry(4, &[2, 2], &[9.0; 4], 0)])
        .await
        .unwrap();
    let err = reply.entries[0].clone().into_result().unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PsError::ShapeMismatch(_)), "{msg}");
    assert!(
        msg.contains("key 4") && msg.contains("[2, 2]") && msg.contains("float32 [3]"),
        "{msg}"
    );
    // Right shape, wrong dtype.
    let mut e = entry(4, &[3], &[], 0);
    e.dtype = DType::F64;
    e.payload = f64s(&[1.0; 3]);
    let reply = raw.call(Op::Push, vec![e]).await.unwrap();
    let msg = reply.entries[0]
        .clone()
        .into_result()
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("float64") && msg.contains("float32 [3]"),
        "{msg}"
    );
    // A payload that does not match the shape.
    let mut e = entry(4, &[3], &[1.0, 2.0], 0);
    e.round = 0;
    let reply = raw.call(Op::Push, vec![e]).await.unwrap();
    assert!(matches!(
        reply.entries[0].clone().into_result(),
        Err(PsError::ShapeMismatch(_))
    ));
    // Unknown key.
    let reply = raw
        .call(Op::Pull, vec![entry(77, &[3], &[], 0)])
        .await
        .unwrap();
    let err = reply.entries[0].clone().into_result().unwrap_err();
    assert!(
        matches!(&err, PsError::UnknownKey(m) if m.contains("key 77")),
        "{err}"
    );

    // Nothing changed: the value is still the init value at round 0 ...
    let v = within(w0.pull(&[4]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [1.0, 2.0, 3.0]);
    // ... and the round completes normally with both workers' real pushes.
    let t = w0.push(vec![(4, DType::F32, f32s(&[1.0, 1.0, 1.0]))]);
    let reply = raw
        .call(Op::Push, vec![entry(4, &[3], &[2.0, 2.0, 2.0], 0)])
        .await
        .unwrap();
    reply.entries[0].clone().into_result().unwrap();
    within(t.wait()).await.unwrap();
    let v = within(w0.pull(&[4]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [3.0, 3.0, 3.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_init_with_another_shape_is_refused_the_same_one_is_idempotent() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1000).await;
    within(
        workers[0]
            .init(vec![(8, DType::F32, vec![2, 3], f32s(&[5.0; 6]))])
            .wait(),
    )
    .await
    .unwrap();
    let err = within(
        workers[1]
            .init(vec![(8, DType::F32, vec![3, 2], f32s(&[0.0; 6]))])
            .wait(),
    )
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PsError::ShapeMismatch(_)), "{msg}");
    assert!(
        msg.contains("key 8") && msg.contains("[3, 2]") && msg.contains("[2, 3]"),
        "{msg}"
    );
    // Same shape again from both ranks: fine, and rank 0's value stands.
    within(
        workers[1]
            .init(vec![(8, DType::F32, vec![2, 3], f32s(&[0.0; 6]))])
            .wait(),
    )
    .await
    .unwrap();
    within(
        workers[0]
            .init(vec![(8, DType::F32, vec![2, 3], f32s(&[9.0; 6]))])
            .wait(),
    )
    .await
    .unwrap();
    let v = within(workers[1].pull(&[8]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [5.0; 6]);
    // The worker-side check names both shapes too, without a round trip.
    let err = within(
        workers[0]
            .push(vec![(8, DType::F32, f32s(&[1.0; 4]))])
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("float32 [2, 3]"), "{err}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_zero_rank_init_waits_for_rank_zero() {
    let servers = Servers::start(1, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1000).await;
    let early = tokio::spawn(
        workers[1]
            .init(vec![(1, DType::F32, vec![2], f32s(&[0.0; 2]))])
            .wait(),
    );
    tokio::task::yield_now().await;
    assert!(!early.is_finished());
    within(
        workers[0]
            .init(vec![(1, DType::F32, vec![2], f32s(&[4.0, 5.0]))])
            .wait(),
    )
    .await
    .unwrap();
    within(early).await.unwrap().unwrap();
    let v = within(workers[1].pull(&[1]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [4.0, 5.0]);
    servers.stop().await;
}

async fn assert_closed(stream: &mut (impl tokio::io::AsyncRead + Unpin)) {
    let mut buf = vec![0u8; 4096];
    loop {
        match within(stream.read(&mut buf)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => continue,
        }
    }
}

/// Proves the server still serves a well-behaved worker.
async fn still_serving(servers: &Servers) {
    let w = within(Worker::connect(servers.plane(0, 1, Mode::Sync, 1000)))
        .await
        .unwrap();
    within(
        w.init(vec![(100, DType::F32, vec![1], f32s(&[1.0]))])
            .wait(),
    )
    .await
    .unwrap();
    within(w.push(vec![(100, DType::F32, f32s(&[2.0]))]).wait())
        .await
        .unwrap();
    let v = within(w.pull(&[100]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [2.0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_malformed_frames_close_only_that_connection() {
    let servers = Servers::start(1, 1, Some(b"job-secret")).await;
    let addr = servers.addrs[0].0;

    // Unauthenticated garbage: the handshake fails and the connection closes.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    s.write_all(&[0xAB; 4096]).await.unwrap();
    assert_closed(&mut s).await;

    // Authenticated, then frames that break the protocol.
    let bad_frames: Vec<Vec<u8>> = vec![
        vec![0xFF; 64],            // length over the cap
        vec![3, 0, 0, 0, 1, 2, 3], // length shorter than a header
        {
            let mut f = Frame::request(Op::Pull, 1, vec![entry(1, &[1], &[], 0)])
                .to_bytes()
                .to_vec();
            f[4] = 200; // unknown op
            f
        },
        Frame::request(Op::Pull, 1, vec![entry(1, &[1], &[], 0)])
            .to_bytes()
            .to_vec(), // before Hello
    ];
    for bytes in bad_frames {
        let mut s = transport::connect(addr, &Credentials::secret(Some(b"job-secret")))
            .await
            .unwrap();
        s.write_all(&bytes).await.unwrap();
        assert_closed(&mut s).await;
    }
    // Truncated frame, then the peer leaves.
    let mut s = transport::connect(addr, &Credentials::secret(Some(b"job-secret")))
        .await
        .unwrap();
    let f = Frame::request(Op::Pull, 1, vec![entry(1, &[1], &[], 0)]).to_bytes();
    s.write_all(&f[..f.len() / 2]).await.unwrap();
    drop(s);

    still_serving(&servers).await;
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_is_refused() {
    let servers = Servers::start(1, 1, Some(b"right")).await;
    for secret in [Some(&b"wrong"[..]), None] {
        let mut plane = servers.plane(0, 1, Mode::Sync, 1000);
        plane.creds = Credentials::secret(secret);
        let err = within(Worker::connect(plane)).await.err().unwrap();
        assert!(matches!(err, PsError::Auth(_)), "{err}");
    }
    still_serving(&servers).await;
    servers.stop().await;
}

//! A push sent again after its reply was lost (the worker's server was lost and another took
//! its keys over) is applied once: real servers on 127.0.0.1, a hand-driven worker connection
//! that drops the reply of its first push and sends it again marked as sent again.

mod common;

use common::*;
use ps_core::DType;
use ps_core::protocol::frame::{Entry, Frame, Mode, Op};
use ps_core::updater::OptimizerSpec;
use ps_core::worker::Worker;

/// Sends `entries` as a request marked as sent again; returns the reply.
async fn resend(raw: &mut Raw, op: Op, entries: Vec<Entry>) -> Frame {
    let mut frame = Frame::request(op, 9_000, entries);
    frame.resent = true;
    raw.w.write_frame(&frame).await.unwrap();
    raw.w.flush().await.unwrap();
    within(raw.r.read_frame()).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_sent_again_is_summed_once_in_dist_sync() {
    let servers = Servers::start(1, 2, None).await;
    let mut raw = Raw::open(&servers, 0, 2).await;
    let other = [
        within(Worker::connect(servers.plane(1, 2, Mode::Sync, 1000)))
            .await
            .unwrap(),
    ];
    let init = raw
        .call(Op::Init, vec![entry(1, &[2], &[0.0, 0.0], 0)])
        .await;
    init.unwrap().entries[0].clone().into_result().unwrap();
    let item = (1, DType::F32, vec![2], f32s(&[9.0, 9.0]));
    within(other[0].init(vec![item]).wait()).await.unwrap();

    // The push reaches the server; its reply is "lost" (never read here).
    raw.send(Op::Push, vec![entry(1, &[2], &[1.0, 1.0], 0)])
        .await;
    let first = within(raw.r.read_frame()).await.unwrap().unwrap();
    assert_eq!(first.entries[0].status, 0);
    // Sent again, marked so: answered, not summed again.
    let again = resend(&mut raw, Op::Push, vec![entry(1, &[2], &[1.0, 1.0], 0)]).await;
    again.entries[0].clone().into_result().unwrap();
    // Unmarked, the same push is still refused as a second push of the round.
    let twice = raw
        .call(Op::Push, vec![entry(1, &[2], &[1.0, 1.0], 0)])
        .await;
    let err = twice.unwrap().entries[0].clone().into_result().unwrap_err();
    assert!(err.to_string().contains("pushed round 0 twice"), "{err}");

    let t = other[0].pushpull(vec![(1, DType::F32, f32s(&[2.0, 2.0]))]);
    assert_eq!(to_f32(&within(t.wait()).await.unwrap()[0]), [3.0, 3.0]);
    // A pushpull sent again after its round completed gets that round's value.
    let late = resend(&mut raw, Op::PushPull, vec![entry(1, &[2], &[1.0, 1.0], 0)]).await;
    let value = late.entries[0].clone().into_result().unwrap();
    assert_eq!(to_f32(&value.payload), [3.0, 3.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_sent_again_is_applied_once_in_dist_async() {
    let servers = Servers::start(1, 1, None).await;
    let mut raw = Raw::try_open(&servers, 0, 1, Mode::Async).await.unwrap();
    let sgd = OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), 1.0)],
        key_mults: vec![],
        payload: Vec::new(),
    };
    let mut set = Entry::new(0, DType::F32, &[], 0, 0);
    set.payload = bytes::Bytes::from(sgd.encode());
    let r = raw.call(Op::SetOptimizer, vec![set]).await.unwrap();
    r.entries[0].clone().into_result().unwrap();
    let init = raw
        .call(Op::Init, vec![entry(1, &[2], &[10.0, 10.0], 0)])
        .await;
    init.unwrap().entries[0].clone().into_result().unwrap();

    // Pushes number 0 and 1 are applied; number 1 is sent again; number 2 is new.
    for n in 0..2 {
        let r = raw
            .call(Op::Push, vec![entry(1, &[2], &[1.0, 1.0], n)])
            .await;
        r.unwrap().entries[0].clone().into_result().unwrap();
    }
    let again = resend(&mut raw, Op::Push, vec![entry(1, &[2], &[1.0, 1.0], 1)]).await;
    again.entries[0].clone().into_result().unwrap();
    let new = resend(&mut raw, Op::PushPull, vec![entry(1, &[2], &[1.0, 1.0], 2)]).await;
    let value = new.entries[0].clone().into_result().unwrap();
    assert_eq!(to_f32(&value.payload), [7.0, 7.0]);
    servers.stop().await;
}

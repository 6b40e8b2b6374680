//! A restarted worker takes back a lost one's place in a running dist_sync job: the servers
//! tell it where each piece stands, and count once the pushes its predecessor had made. Real
//! servers and workers on 127.0.0.1, no scheduler (the scheduler's part is unit-tested in
//! `scheduler::membership`).

mod common;

use common::*;
use ps_core::DType;
use ps_core::protocol::frame::Mode;
use ps_core::worker::Worker;

/// Key 1 lives whole on one server; key 2 (8 elements, above the bound of 4) is sliced over both.
const SMALL: u64 = 1;
const SLICED: u64 = 2;

async fn init(w: &Worker, fill: f32) {
    let items = vec![
        (SMALL, DType::F32, vec![2], f32s(&[fill; 2])),
        (SLICED, DType::F32, vec![8], f32s(&[fill; 8])),
    ];
    within(w.init(items).wait()).await.unwrap();
}

fn push(w: &Worker, small: f32, sliced: f32) -> ps_core::worker::Ticket {
    w.pushpull(vec![
        (SMALL, DType::F32, f32s(&[small; 2])),
        (SLICED, DType::F32, f32s(&[sliced; 8])),
    ])
}

async fn values(t: ps_core::worker::Ticket) -> (Vec<f32>, Vec<f32>) {
    let v = within(t.wait()).await.unwrap();
    (to_f32(&v[0]), to_f32(&v[1]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_worker_resumes_mid_round_and_every_push_counts_once() {
    let servers = Servers::start(2, 2, None).await;
    let mut workers = servers.workers(2, Mode::Sync, 4).await;
    init(&workers[0], 0.0).await;
    init(&workers[1], 0.0).await;
    // Round 0, whole.
    let (a, b) = (push(&workers[0], 1.0, 1.0), push(&workers[1], 2.0, 2.0));
    assert_eq!(values(a).await, (vec![3.0; 2], vec![3.0; 8]));
    values(b).await;

    // Round 1: worker 0 pushes both keys; worker 1 pushes only the small one, then is lost.
    let w0_round1 = push(&workers[0], 10.0, 10.0);
    let partial = workers[1].push(vec![(SMALL, DType::F32, f32s(&[20.0; 2]))]);
    within(partial.wait()).await.unwrap();
    drop(workers.pop());

    // Its restart: the servers say where each piece stands for rank 1.
    let mut plane = servers.plane(1, 2, Mode::Sync, 4);
    plane.rejoined = true;
    let restarted = within(Worker::connect(plane)).await.unwrap();
    init(&restarted, 99.0).await; // rank 1's init values never count
    assert_eq!(restarted.rounds(SMALL).unwrap(), 2);
    assert_eq!(restarted.rounds(SLICED).unwrap(), 1);
    // It resumes at the step in progress and pushes every key of it: the small key's push
    // was made by its predecessor already and is answered without being summed again.
    restarted.resume_at(1);
    let redo = push(&restarted, 200.0, 200.0);
    let round1 = (vec![30.0; 2], vec![210.0; 8]);
    assert_eq!(values(redo).await, round1);
    assert_eq!(values(w0_round1).await, round1);
    for key in [SMALL, SLICED] {
        assert_eq!(restarted.rounds(key).unwrap(), 2);
    }

    // From here both workers push in step, every push summed once.
    let (a, b) = (push(&workers[0], 1.0, 1.0), push(&restarted, 1.0, 1.0));
    assert_eq!(values(a).await, (vec![2.0; 2], vec![2.0; 8]));
    assert_eq!(values(b).await, (vec![2.0; 2], vec![2.0; 8]));
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_restarted_worker_may_repeat_a_round_or_replace_a_connection() {
    let servers = Servers::start(1, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 4).await;
    init(&workers[0], 0.0).await;
    init(&workers[1], 0.0).await;
    within(
        workers[0]
            .push(vec![(SMALL, DType::F32, f32s(&[1.0; 2]))])
            .wait(),
    )
    .await
    .unwrap();
    // A second connection claiming rank 0 is refused, as before.
    let e = Worker::connect(servers.plane(0, 2, Mode::Sync, 4))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("already connected"), "{e}");
    // Rank 0 pushing round 0 again (without a restart) is an error, and nothing is summed.
    workers[0].resume_at(0);
    let e = within(
        workers[0]
            .push(vec![(SMALL, DType::F32, f32s(&[5.0; 2]))])
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("pushed round 0 twice"), "{e}");
    let done = workers[1].pushpull(vec![(SMALL, DType::F32, f32s(&[2.0; 2]))]);
    assert_eq!(to_f32(&within(done.wait()).await.unwrap()[0]), [3.0; 2]);
    servers.stop().await;
}

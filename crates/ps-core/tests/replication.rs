//! Chain replication between in-process servers on 127.0.0.1: the backup holds every answered
//! change and serves it once the primary is gone; what a finished worker keeps from completing
//! is still answered as without backups.

mod common;

use common::*;
use ps_core::DType;
use ps_core::protocol::frame::Mode;
use ps_core::server::Farewell;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backup_serves_every_answered_round_once_the_primary_is_gone() {
    let mut servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 4).await;
    let plane = |rank| {
        let mut p = servers.plane(rank, 2, Mode::Sync, 4);
        p.replicas = 1;
        p
    };
    let workers = [
        within(ps_core::worker::Worker::connect(plane(0)))
            .await
            .unwrap(),
        within(ps_core::worker::Worker::connect(plane(1)))
            .await
            .unwrap(),
    ];
    // Key 1 (2 elements) lives on one server; key 2 (8 elements, above the bound) on both.
    for w in &workers {
        let items = vec![
            (1, DType::F32, vec![2], f32s(&[0.0; 2])),
            (2, DType::F32, vec![8], f32s(&[0.0; 8])),
        ];
        within(w.init(items).wait()).await.unwrap();
    }
    for round in 1..=3 {
        let tickets: Vec<_> = workers
            .iter()
            .map(|w| {
                w.pushpull(vec![
                    (1, DType::F32, f32s(&[1.0; 2])),
                    (2, DType::F32, f32s(&[0.5; 8])),
                ])
            })
            .collect();
        for t in tickets {
            let v = within(t.wait()).await.unwrap();
            assert_eq!(to_f32(&v[0]), [2.0; 2], "round {round}");
            assert_eq!(to_f32(&v[1]), [1.0; 8], "round {round}");
        }
    }
    // Server 0 leaves; everyone moves its keys to server 1, which has every answered round.
    let bye = Farewell {
        failed: true,
        reason: "stopped by the test".into(),
    };
    servers.stop_one(0, bye).await;
    servers.servers[0].servers_lost(&[0]);
    for w in &workers {
        w.servers_lost(&[0]);
    }
    let v = within(workers[0].pull(&[1, 2]).wait()).await.unwrap();
    assert_eq!((to_f32(&v[0]), to_f32(&v[1])), (vec![2.0; 2], vec![1.0; 8]));
    // And the job goes on there.
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[3.0; 2]))]))
        .collect();
    for t in tickets {
        assert_eq!(to_f32(&within(t.wait()).await.unwrap()[0]), [6.0; 2]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_that_can_never_complete_is_still_answered() {
    let servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 1000).await;
    let w1 = within(ps_core::worker::Worker::connect({
        let mut p = servers.plane(1, 2, Mode::Sync, 1000);
        p.replicas = 1;
        p
    }))
    .await
    .unwrap();
    // Worker 0 talks to server 0 by hand, which holds key 5.
    assert_eq!(
        ps_core::partition::Partitioner::new(2, 1000).server_of(5),
        0
    );
    let mut raw0 = Raw::open(&servers, 0, 2).await;
    let init = raw0.call(
        ps_core::protocol::frame::Op::Init,
        vec![entry(5, &[2], &[0.0; 2], 0)],
    );
    init.await.unwrap().entries[0]
        .clone()
        .into_result()
        .unwrap();
    within(
        w1.init(vec![(5, DType::F32, vec![2], f32s(&[0.0; 2]))])
            .wait(),
    )
    .await
    .unwrap();
    // Worker 0 finishes before worker 1's push of a round it will never join arrives.
    for s in &servers.servers {
        s.worker_finished(0, "worker 0 on 127.0.0.1");
    }
    let push = w1.push(vec![(5, DType::F32, f32s(&[1.0; 2]))]);
    within(push.wait()).await.unwrap();
    let e = within(w1.pull(&[5]).wait()).await.unwrap_err();
    assert!(
        e.to_string().contains("worker 0 on 127.0.0.1 has finished"),
        "{e}"
    );
}

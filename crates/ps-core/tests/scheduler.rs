//! The control plane over real TCP on 127.0.0.1, when all goes well: a scheduler from `serve`,
//! nodes from `ControlClient::join`; forming the job, ranks, barriers, finishing, and the
//! registrations the scheduler refuses. Every test runs under a hard deadline and waits for
//! events, never for fixed times. Faults are in `scheduler_faults.rs`.

mod scheduler_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ps_core::protocol::pb;
use ps_core::scheduler::{ControlClient, Group, Outcome};
use ps_core::{PsError, Role};
use scheduler_common::*;

#[tokio::test]
async fn job_forms_with_distinct_ranks_and_completes() {
    within(async {
        let s = Scheduler::start(2, 2, |_| {}).await;
        let joins = [
            worker(&s.cfg, |_| {}),
            server(&s.cfg, 7101),
            worker(&s.cfg, |_| {}),
            server(&s.cfg, 7100),
        ];
        let mut nodes = Vec::new();
        for j in joins {
            nodes.push(joined(j).await);
        }
        let (workers, servers): (Vec<_>, Vec<_>) = nodes
            .iter()
            .partition(|n| n.membership().me.role == Role::Worker);
        let ranks = |v: &[&ControlClient]| {
            let mut r: Vec<u32> = v.iter().map(|n| n.membership().me.rank).collect();
            r.sort();
            r
        };
        assert_eq!(ranks(&workers), [0, 1]);
        assert_eq!(ranks(&servers), [0, 1]);
        let mut ids: Vec<u32> = nodes.iter().map(|n| n.membership().me.node_id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 4, "node ids are unique");
        let table = &nodes[0].membership().servers;
        for n in &nodes {
            let m = n.membership();
            assert_eq!((m.num_workers, m.num_servers), (2, 2));
            assert_eq!(&m.servers, table, "everyone gets the same server table");
        }
        let mut ports = Vec::new();
        for (rank, entry) in table.iter().enumerate() {
            assert_eq!(entry.rank, rank as u32, "the table is ordered by rank");
            assert_eq!(entry.host, "127.0.0.1");
            let owner = servers
                .iter()
                .find(|s| s.membership().me.rank == rank as u32);
            assert_eq!(
                owner.unwrap().membership().me,
                *entry,
                "as the server itself sees it"
            );
            ports.push(entry.port);
        }
        ports.sort();
        assert_eq!(ports, [7100, 7101], "the advertised data-plane ports");

        for w in &workers {
            w.finish().await.unwrap();
        }
        for server in &servers {
            let h = health_when(server, |h| h.shutdown.is_some()).await;
            let order = h.shutdown.unwrap();
            assert!(!order.failed);
            assert_eq!(order.reason, "all 2 workers finished");
            assert_eq!(h.lost, None);
        }
        drop(nodes);
        assert_eq!(s.outcome().await, Outcome::Completed);
    })
    .await
}

#[tokio::test]
async fn worker_ids_fix_ranks_whatever_the_order() {
    within(async {
        let s = Scheduler::start(1, 2, |_| {}).await;
        let one = worker(&s.cfg, |c| c.worker_id = Some(1));
        tokio::task::yield_now().await;
        let zero = worker(&s.cfg, |c| c.worker_id = Some(0));
        let server = joined(server(&s.cfg, 7000)).await;
        let (one, zero) = (joined(one).await, joined(zero).await);
        assert_eq!(one.membership().me.rank, 1);
        assert_eq!(zero.membership().me.rank, 0);
        one.finish().await.unwrap();
        zero.finish().await.unwrap();
        health_when(&server, |h| h.shutdown.is_some()).await;
        drop((one, zero, server));
        assert_eq!(s.outcome().await, Outcome::Completed);
    })
    .await
}

#[tokio::test]
async fn barriers_wait_for_every_member_and_are_reusable() {
    within(async {
        let s = Scheduler::start(2, 2, |_| {}).await;
        let (servers, workers) = form(&s.cfg, 2, 2).await;

        // Worker 0 must not pass before worker 1 has entered.
        let second_entered = Arc::new(AtomicBool::new(false));
        let first = tokio::spawn({
            let (w0, flag) = (workers[0].clone(), second_entered.clone());
            async move {
                w0.barrier(Group::Workers).await.unwrap();
                flag.load(Ordering::SeqCst)
            }
        });
        // Time for a broken barrier to let worker 0 through alone.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!first.is_finished());
        second_entered.store(true, Ordering::SeqCst);
        workers[1].barrier(Group::Workers).await.unwrap();
        assert!(
            first.await.unwrap(),
            "worker 0 passed before worker 1 entered"
        );

        for _round in 0..3 {
            let enter = |n: &ControlClient| {
                let n = n.clone();
                tokio::spawn(async move { n.barrier(Group::All).await })
            };
            let all: Vec<_> = servers.iter().chain(&workers).map(enter).collect();
            for b in all {
                b.await.unwrap().unwrap();
            }
            let (a, b) = tokio::join!(
                servers[0].barrier(Group::Servers),
                servers[1].barrier(Group::Servers)
            );
            a.unwrap();
            b.unwrap();
        }
        let e = workers[0].barrier(Group::Servers).await.unwrap_err();
        assert!(
            matches!(&e, PsError::Rejected(m) if m.contains("not a member")),
            "{e}"
        );

        workers[0].finish().await.unwrap();
        let e = workers[1].barrier(Group::Workers).await.unwrap_err();
        assert!(
            matches!(&e, PsError::Rejected(m) if m.contains("worker 0")),
            "{e}"
        );
        workers[1].finish().await.unwrap();
        drop((servers, workers));
        assert_eq!(s.outcome().await, Outcome::Completed);
    })
    .await
}

#[tokio::test]
async fn a_wrong_secret_gets_nothing_and_the_job_goes_on() {
    within(async {
        let s = Scheduler::start(1, 1, |c| c.secret = Some(b"right".to_vec())).await;
        for secret in [Some(b"wrong".to_vec()), None] {
            let e = worker(&s.cfg, |c| c.secret = secret)
                .await
                .unwrap()
                .unwrap_err();
            assert!(
                matches!(&e, PsError::Auth(m) if m.contains("MXRS_SECRET")),
                "{e}"
            );
        }
        let (servers, workers) = form(&s.cfg, 1, 1).await;
        workers[0].finish().await.unwrap();
        drop((servers, workers));
        assert_eq!(s.outcome().await, Outcome::Completed);
    })
    .await
}

#[tokio::test]
async fn registration_errors_are_refused_with_one_line() {
    within(async {
        let s = Scheduler::start(1, 2, |_| {}).await;
        let e = refusal(worker(&s.cfg, |c| c.num_workers = 3)).await;
        assert_eq!(
            e,
            "DMLC_NUM_WORKER is 3 on this node but 2 at the scheduler"
        );
        let e = refusal(worker(&s.cfg, |c| c.num_servers = 2)).await;
        assert_eq!(
            e,
            "DMLC_NUM_SERVER is 2 on this node but 1 at the scheduler"
        );
        let e = refusal(worker(&s.cfg, |c| c.worker_id = Some(2))).await;
        assert_eq!(
            e,
            "DMLC_WORKER_ID is 2 but the job has 2 workers (ids 0..1)"
        );
        let e = rejected(ControlClient::join(&s.cfg, Role::Scheduler, "127.0.0.1", 1).await);
        assert!(e.contains("DMLC_ROLE is scheduler"), "{e}");
        let e = refusal(server(&s.cfg, 0)).await;
        assert!(e.contains("data-plane port"), "{e}");
        let unspecified = pb::RegisterRequest {
            num_workers: 2,
            num_servers: 1,
            ..Default::default()
        };
        let mut raw = raw_client(s.addr()).await;
        let status = raw.register(unspecified).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        for node_id in [0, 1, 99] {
            let status = raw
                .heartbeat(pb::HeartbeatRequest { node_id })
                .await
                .unwrap_err();
            assert!(status.message().contains("not a member"), "{status:?}");
        }

        // Two workers ask for the same id, two servers for one place: one of each is refused.
        let mut joins = vec![
            worker(&s.cfg, |c| c.worker_id = Some(0)),
            worker(&s.cfg, |c| c.worker_id = Some(0)),
            server(&s.cfg, 7000),
            server(&s.cfg, 7001),
        ];
        joins.push(worker(&s.cfg, |_| {}));
        let (mut refusals, mut accepted) = (Vec::new(), Vec::new());
        for j in joins {
            match j.await.unwrap() {
                Ok(node) => accepted.push(node),
                Err(PsError::Rejected(m)) => refusals.push(m),
                Err(e) => panic!("{e:?}"),
            }
        }
        refusals.sort();
        assert_eq!(refusals.len(), 2, "{refusals:?}");
        assert_eq!(
            refusals[0],
            "DMLC_WORKER_ID 0 is already taken by the worker on 127.0.0.1"
        );
        assert!(refusals[1].starts_with("the job has 1 server places and all are taken"));
        assert_eq!(accepted.len(), 3);

        let e = refusal(worker(&s.cfg, |_| {})).await;
        assert!(e.contains("has already formed"), "{e}");
        for n in &accepted {
            if n.membership().me.role == Role::Worker {
                n.finish().await.unwrap();
            }
        }
        drop(accepted);
        assert_eq!(s.outcome().await, Outcome::Completed);
    })
    .await
}

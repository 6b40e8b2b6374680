//! The control plane over real TCP on 127.0.0.1 when nodes fail: a worker that dies, a node
//! that falls silent, a frozen peer at shutdown, a scheduler that is stopped, vanishes or
//! freezes. Every test runs under a hard deadline and waits for events, never for fixed times.

mod scheduler_common;

use std::time::Duration;

use ps_core::protocol::pb;
use ps_core::scheduler::{ControlClient, Group, Outcome, serve};
use ps_core::{Config, PsError, Role};
use scheduler_common::*;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::Instant;

#[tokio::test]
async fn a_dropped_worker_is_lost_at_once() {
    within(async {
        // A long timeout: the loss must come from the closed stream, not from silence.
        let s = Scheduler::start(1, 2, |c| c.heartbeat_timeout = Duration::from_secs(5)).await;
        let (servers, mut workers) = form(&s.cfg, 1, 2).await;
        let w1 = workers.pop().unwrap();
        let w0 = workers.pop().unwrap();
        let waiting = tokio::spawn({
            let w1 = w1.clone();
            async move { w1.barrier(Group::Workers).await }
        });
        let died = Instant::now();
        drop(w0);

        let e = waiting.await.unwrap().unwrap_err();
        let PsError::NodeLost(message) = e else {
            panic!("expected NodeLost, got {e:?}");
        };
        assert!(
            message.starts_with("worker 0 on 127.0.0.1 (node "),
            "{message}"
        );
        assert!(message.ends_with(") disconnected"), "{message}");
        assert_eq!(lost(&servers[0]).await, message);
        assert_eq!(lost(&w1).await, message);
        assert!(
            died.elapsed() < Duration::from_secs(2),
            "took {:?}",
            died.elapsed()
        );
        // Later barriers fail too.
        let e = w1.barrier(Group::All).await.unwrap_err();
        assert!(matches!(&e, PsError::NodeLost(m) if *m == message), "{e}");

        w1.finish().await.unwrap();
        let h = health_when(&servers[0], |h| h.shutdown.is_some()).await;
        let order = h.shutdown.unwrap();
        assert!(order.failed);
        assert_eq!(order.reason, message);
        drop((servers, w1));
        assert_eq!(s.outcome().await, Outcome::Failed(message));
    })
    .await
}

#[tokio::test]
async fn a_silent_node_is_lost_after_the_timeout() {
    within(async {
        let limit = Duration::from_millis(600);
        let s = Scheduler::start(1, 2, |c| c.heartbeat_timeout = limit).await;
        // A worker that registers and listens to events, but never heart-beats.
        let mut raw = raw_client(s.addr()).await;
        let silent = tokio::spawn({
            let mut raw = raw.clone();
            async move {
                // No host: the scheduler takes the address the node connected from.
                let request = pb::RegisterRequest {
                    role: pb::Role::Worker.into(),
                    num_workers: 2,
                    num_servers: 1,
                    ..Default::default()
                };
                raw.register(request).await.unwrap().into_inner()
            }
        });
        let (servers, workers) = form(&s.cfg, 1, 1).await;
        let me = silent.await.unwrap().me.unwrap();
        let request = pb::EventsRequest {
            node_id: me.node_id,
        };
        let mut events = raw.events(request).await.unwrap().into_inner();
        let quiet_since = Instant::now();

        let message = lost(&servers[0]).await;
        let waited = quiet_since.elapsed();
        let expected = format!(
            "worker {} on 127.0.0.1 (node {}) stopped heart-beating for 600ms",
            me.rank, me.node_id
        );
        assert_eq!(message, expected);
        assert!(
            waited >= limit / 2 && waited < limit * 3,
            "lost after {waited:?}"
        );
        assert_eq!(lost(&workers[0]).await, expected);
        // The silent node hears it too, and heart-beat replies say so.
        let event = events.message().await.unwrap().unwrap();
        assert_eq!(event.message, expected);
        let request = pb::HeartbeatRequest {
            node_id: me.node_id,
        };
        let reply = raw.heartbeat(request).await.unwrap().into_inner();
        assert_eq!(reply.first_lost, expected);
        assert_eq!(reply.lost.len(), 1);

        workers[0].finish().await.unwrap();
        let event = events.message().await.unwrap().unwrap();
        let finished = workers[0].membership().me.node_id;
        assert!(
            matches!(&event.kind, Some(pb::event::Kind::WorkerFinished(n)) if n.node_id == finished),
            "{event:?}"
        );
        let event = events.message().await.unwrap().unwrap();
        assert!(matches!(event.kind, Some(pb::event::Kind::Shutdown(s)) if s.failed));
        drop((events, raw, servers, workers));
        assert_eq!(s.outcome().await, Outcome::Failed(expected));
    })
    .await
}

#[tokio::test]
async fn stopping_the_scheduler_before_the_job_forms() {
    within(async {
        let mut s = Scheduler::start(1, 1, |_| {}).await;
        let waiting = worker(&s.cfg, |_| {});
        until_workers_registered(&s.cfg).await;
        s.stop.take().unwrap().send(()).unwrap();
        assert!(matches!(waiting.await.unwrap(), Err(PsError::Shutdown)));
        let expected = "the scheduler was stopped before the job finished".to_string();
        assert_eq!(s.outcome().await, Outcome::Failed(expected));
    })
    .await
}

#[tokio::test]
async fn stopping_the_scheduler_tells_every_node() {
    within(async {
        let mut s = Scheduler::start(1, 1, |_| {}).await;
        let (servers, workers) = form(&s.cfg, 1, 1).await;
        s.stop.take().unwrap().send(()).unwrap();
        for n in servers.iter().chain(&workers) {
            let h = health_when(n, |h| h.shutdown.is_some()).await;
            let order = h.shutdown.unwrap();
            assert!(order.failed);
            assert_eq!(
                order.reason,
                "the scheduler was stopped before the job finished"
            );
        }
        assert!(matches!(s.outcome().await, Outcome::Failed(_)));
        // The job is over: the scheduler's absence is no loss.
        assert_eq!(workers[0].health().borrow().lost, None);
    })
    .await
}

#[tokio::test]
async fn a_vanished_scheduler_is_named() {
    within(async {
        let s = Scheduler::start(1, 1, |_| {}).await;
        let (servers, workers) = form(&s.cfg, 1, 1).await;
        let waiting = tokio::spawn({
            let w = workers[0].clone();
            async move { w.barrier(Group::All).await }
        });
        s.serve.abort();
        let expected = format!("scheduler on 127.0.0.1:{}", s.cfg.root_port);
        for n in servers.iter().chain(&workers) {
            let message = lost(n).await;
            assert!(message.starts_with(&expected), "{message}");
        }
        let e = waiting.await.unwrap().unwrap_err();
        assert!(
            matches!(&e, PsError::NodeLost(m) if m.starts_with(&expected)),
            "{e:?}"
        );
        assert_port_closes(s.addr()).await;
    })
    .await
}

#[tokio::test]
async fn a_frozen_peer_does_not_hold_up_the_shutdown() {
    within(async {
        // The server never heart-beats; it must not count as lost before the worker finishes.
        let s = Scheduler::start(1, 1, |c| c.heartbeat_timeout = Duration::from_secs(1)).await;
        let cfg = s.cfg.clone();
        let (server, thaw) = frozen_after(async move {
            ControlClient::join(&cfg, Role::Server, "127.0.0.1", 7000).await
        });
        let w = joined(worker(&s.cfg, |_| {})).await;
        let server = server.await.unwrap().unwrap();
        let frozen_at = Instant::now();
        w.finish().await.unwrap();
        drop(w);
        // The frozen server never closes its stream nor acknowledges the close: the scheduler
        // waits out its grace periods (1 s each here), cuts the connection and returns.
        assert_eq!(s.outcome().await, Outcome::Completed);
        assert!(frozen_at.elapsed() >= Duration::from_secs(2));
        drop(thaw);
        drop(server);
    })
    .await
}

#[tokio::test]
async fn a_frozen_scheduler_is_noticed_by_heartbeats() {
    within(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut cfg = Config::local(port, 1, 1);
        cfg.heartbeat_interval = Duration::from_millis(50);
        cfg.heartbeat_timeout = Duration::from_millis(500);
        let listener = listener.into_std().unwrap();
        let (formed_tx, formed_rx) = oneshot::channel::<()>();
        let scheduler_cfg = cfg.clone();
        // The scheduler runs until the job forms, then its whole runtime freezes.
        let (_, thaw) = frozen_after(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            let serving = serve(&scheduler_cfg, listener, std::future::pending());
            tokio::select! {
                _ = serving => {}
                _ = formed_rx => {}
            }
        });
        let (servers, workers) = form(&cfg, 1, 1).await;
        let waiting = tokio::spawn({
            let w = workers[0].clone();
            async move { w.barrier(Group::All).await }
        });
        let _ = formed_tx.send(());
        let expected =
            format!("scheduler on 127.0.0.1:{port} did not answer heart-beats for 500ms");
        for n in servers.iter().chain(&workers) {
            let message = lost(n).await;
            assert!(message.starts_with(&expected), "{message}");
        }
        let e = waiting.await.unwrap().unwrap_err();
        assert!(
            matches!(&e, PsError::NodeLost(m) if m.starts_with(&expected)),
            "{e:?}"
        );
        drop(thaw);
    })
    .await
}

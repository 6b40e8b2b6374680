//! The connection a primary server replicates over: one that breaks is opened again and its
//! backup gets every piece again, so nothing waits forever; a backup that cannot be reached
//! makes its primary leave the job, naming the backup, instead of hanging.

mod common;

use std::time::Duration;

use common::*;
use ps_core::DType;
use ps_core::PsError;
use ps_core::protocol::frame::Mode;

/// Two workers pushpull `g` into key 1 (one element per server: keys above the bound of 1 are
/// cut over both); returns the values worker 0 got.
async fn round(workers: &[ps_core::worker::Worker], g: f32) -> Vec<f32> {
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[g; 2]))]))
        .collect();
    let mut out = Vec::new();
    for t in tickets {
        out.push(to_f32(&within(t.wait()).await.unwrap()[0]));
    }
    assert_eq!(out[0], out[1]);
    out.swap_remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_replication_connection_is_opened_again_then_given_up_on() {
    // Server 0 reaches server 1, the backup of its keys, through a proxy the test controls.
    let proxy = Proxy::bind().await;
    let via = proxy.addr;
    let peers = move |me: usize, addrs: &[(std::net::SocketAddr, String)]| {
        let mut out = addrs.to_vec();
        if me == 0 {
            out[1].0 = via;
        }
        out
    };
    let give_up = Duration::from_millis(500);
    let mut servers = Servers::start_replicated_via(2, 2, Mode::Sync, 1, give_up, &peers).await;
    proxy.forward_to(servers.addrs[1].0);
    let mut workers = Vec::new();
    for rank in 0..2 {
        let mut p = servers.plane(rank, 2, Mode::Sync, 1);
        p.replicas = 1;
        workers.push(within(ps_core::worker::Worker::connect(p)).await.unwrap());
    }
    for w in &workers {
        let init = w.init(vec![(1, DType::F32, vec![2], f32s(&[0.0; 2]))]);
        within(init.wait()).await.unwrap();
    }
    assert_eq!(round(&workers, 1.0).await, [2.0, 2.0]);
    // What server 0 sends its backup is lost on the way, then the connection breaks: it is
    // opened again, the backup gets everything again, and the round is answered.
    // (Without an optimizer a round's value is the sum of its pushes.)
    proxy.stall();
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[2.0; 2]))]))
        .collect();
    proxy.dropped_some().await;
    proxy.cut();
    for t in tickets {
        assert_eq!(to_f32(&within(t.wait()).await.unwrap()[0]), [4.0; 2]);
    }
    for step in 3..=5 {
        let want = 2.0 * step as f32;
        assert_eq!(
            round(&workers, step as f32).await,
            [want, want],
            "round {step}"
        );
    }
    // The backup becomes unreachable: server 0 leaves the job, naming it, within the time
    // it was given (no farewell: its workers keep their requests for a failover).
    proxy.close();
    let _pending: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[1.0; 2]))]))
        .collect();
    let why = match servers.ended(0).await {
        Err(PsError::NodeLost(why)) => why,
        other => panic!("server 0 should have left, not {other:?}"),
    };
    let backup = &servers.addrs[1].1;
    assert!(
        why.starts_with(&format!(
            "cannot reach {backup}, the backup of its keys, for 500ms ("
        )),
        "{why}"
    );
    assert!(
        why.ends_with("this server leaves the job so that its keys move to their backups"),
        "{why}"
    );
}

//! What a peer can make a server hold, and who may connect: hand-driven connections against
//! real in-process servers on 127.0.0.1. Memory floods with whole processes are in
//! `processes.rs`.

mod common;

use common::*;
use ps_core::PsError;
use ps_core::protocol::frame::{Mode, Op};
use ps_core::protocol::transport::{self, Credentials};
use ps_core::server::{Limits, MAX_OUTSTANDING_ENTRIES, Waiting};
use std::time::Duration;

/// Polls `servers`' server 0 until `f` holds for what it has waiting (under the hard limit).
async fn until_waiting(servers: &Servers, f: impl Fn(Waiting) -> bool) -> Waiting {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let w = servers.servers[0].waiting();
        if f(w) {
            return w;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still waiting on {w:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_connection_claiming_a_connected_rank_is_refused() {
    let servers = Servers::start(1, 2, None).await;
    let first = Raw::open(&servers, 1, 2).await;
    let e = Raw::try_open(&servers, 1, 2, Mode::Sync)
        .await
        .err()
        .unwrap();
    assert!(matches!(e, PsError::Rejected(_)), "{e:?}");
    // (from a process of this host: through the server's Unix socket)
    assert!(
        e.to_string()
            .starts_with("worker rank 1 is already connected (from local)"),
        "{e}"
    );
    // Rank 0 is free; and once the first connection of rank 1 is gone, so is rank 1.
    Raw::open(&servers, 0, 2).await;
    drop(first);
    within(async {
        while Raw::try_open(&servers, 1, 2, Mode::Sync).await.is_err() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_one_bad_entry_changes_nothing() {
    let servers = Servers::start(1, 2, None).await;
    let mut w0 = Raw::open(&servers, 0, 2).await;
    let mut w1 = Raw::open(&servers, 1, 2).await;
    for raw in [&mut w0, &mut w1] {
        let init = vec![entry(1, &[2], &[1.0, 1.0], 0), entry(2, &[1], &[5.0], 0)];
        let reply = raw.call(Op::Init, init).await.unwrap();
        assert!(reply.entries.iter().all(|e| e.status == 0));
    }
    // Key 1's entry is fine, key 2's has the wrong size: neither is applied.
    let bad = vec![
        entry(1, &[2], &[3.0, 3.0], 0),
        entry(2, &[1], &[1.0, 1.0], 0),
    ];
    let reply = w0.call(Op::Push, bad).await.unwrap();
    let errors: Vec<String> = reply
        .entries
        .into_iter()
        .map(|e| e.into_result().unwrap_err().to_string())
        .collect();
    assert!(
        errors[0].starts_with(
            "key 1: not applied, because key 2 in the same request was refused: key 2: pushed"
        ),
        "{errors:?}"
    );
    assert!(errors[1].starts_with("key 2: pushed 8 bytes"), "{errors:?}");
    // An init of a new key beside a bad one creates nothing either.
    let init = vec![entry(3, &[1], &[4.0], 0), entry(1, &[3], &[0.0; 3], 0)];
    let reply = w0.call(Op::Init, init).await.unwrap();
    assert!(reply.entries.iter().all(|e| e.status != 0));
    let reply = w0
        .call(Op::Pull, vec![entry(3, &[1], &[], 0)])
        .await
        .unwrap();
    assert!(matches!(
        reply.entries[0].clone().into_result(),
        Err(PsError::UnknownKey(_))
    ));
    // Round 0 of key 1 is still open: one push from each worker completes it.
    let reply = w0
        .call(Op::Push, vec![entry(1, &[2], &[1.0, 2.0], 0)])
        .await
        .unwrap();
    assert_eq!(reply.entries[0].status, 0);
    let reply = w1
        .call(Op::PushPull, vec![entry(1, &[2], &[10.0, 20.0], 0)])
        .await
        .unwrap();
    let value = reply.entries[0].clone().into_result().unwrap();
    assert_eq!(to_f32(&value.payload), [11.0, 22.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_connection_leaves_waiting_is_bounded_and_forgotten_when_it_closes() {
    let servers = Servers::start(1, 4, None).await;
    let mut w0 = Raw::open(&servers, 0, 4).await;
    let w1 = Raw::open(&servers, 1, 4).await;
    let mut w2 = Raw::open(&servers, 2, 4).await;
    let inits = |first: u64, n: u64| {
        (first..first + n)
            .map(|k| entry(k, &[1], &[0.0], 0))
            .collect()
    };
    // Worker 1 sends 200,000 inits of keys rank 0 never creates, in frames of 50,000: the
    // server stops reading it once it holds more than its bound of unanswered entries.
    let frame = 50_000;
    let flood = tokio::spawn(async move {
        let mut w1 = w1;
        for chunk in 0..4 {
            // The last send blocks: the server no longer reads this connection.
            w1.send(Op::Init, inits(1_000_000 + chunk * frame, frame))
                .await;
        }
        w1
    });
    let held = MAX_OUTSTANDING_ENTRIES.div_ceil(frame as usize) * frame as usize;
    assert!(held < 200_000);
    until_waiting(&servers, |w| w.inits == held).await;

    // Worker 2 leaves 50,000 waiting inits and a pull parked for a round the others have not
    // pushed; when its connection closes they are forgotten.
    w2.send(Op::Init, inits(5_000_000, frame)).await;
    let reply = w0
        .call(Op::Init, vec![entry(7, &[1], &[0.0], 0)])
        .await
        .unwrap();
    assert_eq!(reply.entries[0].status, 0);
    w2.send(Op::Init, vec![entry(7, &[1], &[0.0], 0)]).await;
    w2.send(Op::Push, vec![entry(7, &[1], &[1.0], 0)]).await;
    w2.send(Op::Pull, vec![entry(7, &[1], &[], 1)]).await;
    let both = Waiting {
        inits: held + frame as usize,
        pulls: 1,
    };
    until_waiting(&servers, |w| w == both).await;
    drop(w2);
    let after = Waiting {
        inits: held,
        pulls: 0,
    };
    until_waiting(&servers, |w| w == after).await;
    flood.abort();
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_reply_could_not_be_read_is_refused() {
    let limits = Limits {
        max_frame: 64 << 10,
        max_inflight: 1 << 20,
    };
    let servers = Servers::start_with(1, 1, None, limits).await;
    let mut raw = Raw::open(&servers, 0, 1).await;
    let n = 4096u64; // 16 KiB a value: four of them do not fit in a 64 KiB reply
    let value = vec![1.0f32; n as usize];
    let reply = raw
        .call(Op::Init, vec![entry(1, &[n], &value, 0)])
        .await
        .unwrap();
    assert_eq!(reply.entries[0].status, 0);
    let pulls = (0..4).map(|_| entry(1, &[n], &[], 0)).collect();
    let reply = raw.call(Op::Pull, pulls).await.unwrap();
    let e = reply.entries[0]
        .clone()
        .into_result()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("over the limit of 65536 (MXRS_MAX_FRAME_BYTES)"),
        "{e}"
    );
    let pulls = (0..3).map(|_| entry(1, &[n], &[], 0)).collect();
    let reply = raw.call(Op::Pull, pulls).await.unwrap();
    assert!(reply.entries.iter().all(|e| e.status == 0));
    servers.stop().await;
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_take_at_most_the_handshake_slots() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};

    let servers = Servers::start(1, 1, Some(b"s")).await;
    let addr = servers.addrs[0].0;
    // Fill every handshake slot with a peer that connects and says nothing, through the
    // server's Unix socket (`mxrs-data/IP:PORT`), where the peer below connects too: the
    // server takes them in the order they came.
    let name = SocketAddr::from_abstract_name(format!("mxrs-data/{addr}")).unwrap();
    let mut silent = Vec::new();
    for _ in 0..transport::MAX_PENDING_HANDSHAKES {
        silent.push(UnixStream::connect_addr(&name).unwrap());
    }
    // One more peer that does the handshake waits: the server reads nothing from it yet.
    let late =
        tokio::spawn(
            async move { transport::connect(addr, &Credentials::secret(Some(b"s"))).await },
        );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!late.is_finished(), "a handshake ran beyond the cap");
    // A silent peer leaving frees its slot for the waiting one.
    let gone = silent.pop().unwrap();
    gone.shutdown(std::net::Shutdown::Both).unwrap();
    drop(gone);
    within(late).await.unwrap().unwrap();
    servers.stop().await;
}

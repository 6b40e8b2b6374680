//! Restarted workers taking back their places (`Job::with_rejoin`).

use super::*;

const MINUTE: Duration = Duration::from_secs(60);

fn restarted(host: &str, rank: Option<u32>) -> Registration {
    worker(host, rank)
}

#[test]
fn a_lost_worker_is_away_until_its_restart_takes_the_place_back() {
    let (mut job, now) = formed_with(Some(MINUTE));
    let mut notices = job.subscribe(S0, now).unwrap().notices;
    let mut waiting = job.enter_barrier(W0, Group::Workers, now).unwrap();
    let sub = job.subscribe(W1, now).unwrap();
    job.disconnected(W1, sub.id, now);
    let w1 = job.member(W1).unwrap().info.clone();
    assert_eq!(
        notices.try_recv().unwrap(),
        Notice::Away {
            node: w1,
            message: "worker 1 on w1 (node 4) disconnected; waiting up to 60s for it to be \
                      restarted"
                .into()
        }
    );
    // Nobody fails because of it: no loss reported, barriers wait, the job goes on.
    assert!(pending(&mut waiting));
    assert_eq!(job.heartbeat(S0, now).unwrap(), (vec![], None));
    assert!(job.ended().borrow().is_none());

    let back = joined(job.register(restarted("w1b", Some(1)), now).unwrap().1);
    assert!(back.rejoined);
    assert_eq!(
        (back.me.node_id, back.me.rank, back.me.host.as_str()),
        (W1, 1, "w1b")
    );
    assert_eq!(
        back.servers.iter().map(|s| s.port).collect::<Vec<_>>(),
        [100, 101]
    );
    assert_eq!(
        notices.try_recv().unwrap(),
        Notice::Rejoined(back.me.clone())
    );
    let mut released = job.enter_barrier(W1, Group::Workers, now).unwrap();
    assert!(answer(&mut waiting).is_ok() && answer(&mut released).is_ok());

    // The place is taken again; its stream closing makes it away once more.
    let m = refusal(&mut job, restarted("w1c", Some(1)));
    assert!(
        m.starts_with("worker 1 is still in the job (worker 1 on w1b, node 4)"),
        "{m}"
    );
    let sub = job.subscribe(W1, now).unwrap();
    job.disconnected(W1, sub.id, now);
    assert!(matches!(notices.try_recv().unwrap(), Notice::Away { .. }));
}

#[test]
fn only_a_lost_workers_place_can_be_taken() {
    let (mut job, now) = formed_with(Some(MINUTE));
    let m = refusal(&mut job, restarted("x", None));
    assert!(
        m.contains("must say which worker it replaces (DMLC_WORKER_ID)"),
        "{m}"
    );
    let m = refusal(&mut job, restarted("x", Some(7)));
    assert_eq!(
        m,
        "DMLC_WORKER_ID is 7 but the job has 2 workers (ids 0..1)"
    );
    let m = refusal(&mut job, server("x", 9));
    assert!(
        m.starts_with("the job (2 workers, 2 servers) has already formed; a server can join"),
        "{m}"
    );
    job.finish(W0, now).unwrap();
    let m = refusal(&mut job, restarted("x", Some(0)));
    assert_eq!(m, "worker 0 has already finished its work");

    // Without restarts a worker cannot come back, and the message says how it could.
    let (mut job, _) = formed();
    let m = refusal(&mut job, restarted("x", Some(1)));
    assert!(m.contains("only in a job started with restarts"), "{m}");
}

#[test]
fn a_worker_not_restarted_in_time_is_lost_for_good() {
    let (mut job, now) = formed_with(Some(MINUTE));
    let mut waiting = job.enter_barrier(W0, Group::Workers, now).unwrap();
    // Silence counts like a closed stream: away first.
    for id in [S0, S1, W0] {
        job.heartbeat(id, now + Duration::from_secs(9)).unwrap();
    }
    let away_at = now + Duration::from_secs(11);
    job.check_timeouts(away_at, Some(Duration::from_secs(10)));
    assert!(pending(&mut waiting));
    job.check_timeouts(away_at + MINUTE, None);
    assert!(
        pending(&mut waiting),
        "lost only once the rejoin timeout has passed"
    );
    job.check_timeouts(away_at + MINUTE + Duration::from_millis(1), None);
    let expected = "worker 1 on w1 (node 4) stopped heart-beating for 10s, and was not \
                    restarted within 60s";
    assert!(matches!(answer(&mut waiting), Err(PsError::NodeLost(m)) if m == expected));
    assert_eq!(job.heartbeat(S0, now).unwrap().1.as_deref(), Some(expected));
    let m = refusal(&mut job, restarted("x", Some(1)));
    assert_eq!(m, format!("worker 1 was lost for good: {expected}"));
    job.finish(W0, now).unwrap();
    let end = job.ended().borrow().clone().unwrap();
    assert_eq!((end.failed, end.reason.as_str()), (true, expected));
}

#[test]
fn servers_are_lost_at_once_even_with_restarts() {
    let (mut job, now) = formed_with(Some(MINUTE));
    let sub = job.subscribe(S1, now).unwrap();
    job.disconnected(S1, sub.id, now);
    let (lost, first) = job.heartbeat(W0, now).unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(
        first.as_deref(),
        Some("server 1 on s1:101 (node 2) disconnected")
    );
}

#[test]
fn a_lost_server_with_backups_is_failed_over() {
    for lost in [S0, S1] {
        let (mut job, now) = formed_replicated();
        let mut all = job.enter_barrier(W0, Group::All, now).unwrap();
        let sub = job.subscribe(lost, now).unwrap();
        job.disconnected(lost, sub.id, now);
        assert_eq!(
            job.heartbeat(W0, now).unwrap(),
            (vec![], None),
            "server {lost}"
        );
        assert!(job.ended().borrow().is_none());
        // The barrier no longer waits for it.
        let others: Vec<_> = [S0, S1, W1]
            .into_iter()
            .filter(|&id| id != lost)
            .map(|id| job.enter_barrier(id, Group::All, now).unwrap())
            .collect();
        assert!(answer(&mut all).is_ok());
        drop(others);
        // Losing the other server too leaves keys without a copy: the job fails.
        let other = if lost == S0 { S1 } else { S0 };
        let sub = job.subscribe(other, now).unwrap();
        job.disconnected(other, sub.id, now);
        assert_eq!(job.heartbeat(W0, now).unwrap().0.len(), 1);
    }
}

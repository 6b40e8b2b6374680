//! Replacement servers in a job with backups (`Job::readmit_server`, `Job::synced`).

use super::*;

fn lose(job: &mut Job, node_id: u32, now: Instant) {
    let sub = job.subscribe(node_id, now).unwrap();
    job.disconnected(node_id, sub.id, now);
}

fn topology(notice: Notice) -> Topology {
    match notice {
        Notice::Topology(t) => t,
        other => panic!("expected a topology, got {other:?}"),
    }
}

/// A job whose server 0 was failed over and replaced by "s0b" (port 200).
fn replaced() -> (Job, Instant, broadcast::Receiver<Notice>) {
    let (mut job, now) = formed_replicated();
    let mut notices = job.subscribe(W0, now).unwrap().notices;
    lose(&mut job, S0, now);
    assert!(matches!(
        notices.try_recv().unwrap(),
        Notice::ServerFailover { .. }
    ));
    let t = topology(notices.try_recv().unwrap());
    assert_eq!((t.epoch, t.chains.clone()), (1, vec![vec![1], vec![1]]));
    assert_eq!(t.lost(), [0]);

    let mut r = server("s0b", 200);
    r.rank = Some(0);
    let back = joined(job.register(r, now).unwrap().1);
    assert!(back.rejoined);
    assert_eq!((back.me.node_id, back.me.rank, back.me.port), (S0, 0, 200));
    assert_eq!(back.servers[0].port, 200);
    assert!(matches!(notices.try_recv().unwrap(), Notice::Rejoined(n) if n.port == 200));
    let t = topology(notices.try_recv().unwrap());
    // It backs up both ranges, behind server 1, on its new address.
    assert_eq!(
        (t.epoch, t.chains.clone()),
        (2, vec![vec![1, 0], vec![1, 0]])
    );
    assert_eq!(
        (t.servers[0].host.as_str(), t.servers[0].port),
        ("s0b", 200)
    );
    assert!(t.lost().is_empty());
    (job, now, notices)
}

#[test]
fn a_replacement_counts_as_a_copy_once_its_primary_copied_every_range() {
    let (mut job, now, mut notices) = replaced();
    // Reports about another epoch, or from a server that is not the ranges' primary, and
    // a report of one range only, do not make it a copy.
    job.synced(S1, 1, 0, &[0, 1], now).unwrap();
    job.synced(S0, 2, 0, &[0, 1], now).unwrap();
    job.synced(S1, 2, 0, &[0], now).unwrap();
    assert_eq!(job.syncing, [(0, vec![1])]);
    job.synced(S1, 2, 0, &[1], now).unwrap();
    assert!(job.syncing.is_empty());
    // Now losing server 1, the other original, costs nothing: server 0 holds everything.
    lose(&mut job, S1, now);
    assert_eq!(job.heartbeat(W0, now).unwrap(), (vec![], None));
    assert!(job.ended().borrow().is_none());
    assert!(matches!(
        notices.try_recv().unwrap(),
        Notice::ServerFailover { .. }
    ));
    let t = topology(notices.try_recv().unwrap());
    assert_eq!((t.epoch, t.chains), (3, vec![vec![0], vec![0]]));
    // A worker only finishes its work: it does not copy keys.
    assert!(job.synced(W0, 3, 1, &[0], now).is_err());
}

#[test]
fn losing_the_last_full_copy_while_the_replacement_copies_fails_the_job() {
    let (mut job, now, _) = replaced();
    job.synced(S1, 2, 0, &[0], now).unwrap();
    lose(&mut job, S1, now);
    let (lost, first) = job.heartbeat(W0, now).unwrap();
    assert_eq!(lost.len(), 1);
    assert!(
        first
            .unwrap()
            .starts_with("server 1 on s1:101 (node 2) disconnected")
    );
}

#[test]
fn a_subscriber_hears_the_current_topology_first() {
    let (mut job, now, _) = replaced();
    let backlog = job.subscribe(W1, now).unwrap().backlog;
    let t = backlog.into_iter().find_map(|n| match n {
        Notice::Topology(t) => Some(t),
        _ => None,
    });
    assert_eq!(t.unwrap().epoch, 2);
    // The replaced server is no longer reported as failed over.
    let (mut job, now) = formed_replicated();
    assert!(job.subscribe(W1, now).unwrap().backlog.is_empty());
}

#[test]
fn a_server_registering_late_is_refused_unless_it_replaces_a_lost_one() {
    let (mut job, _) = formed();
    let m = refusal(&mut job, server("s2", 300));
    assert!(
        m.contains(
            "a server can join it now only to replace a lost one, in a job whose keys \
                    have backups"
        ),
        "{m}"
    );
    let (mut job, _) = formed_replicated();
    let m = refusal(&mut job, server("s2", 300));
    assert!(m.contains("none of its servers is lost"), "{m}");
    let mut r = server("s2", 300);
    r.rank = Some(5);
    let m = refusal(&mut job, r);
    assert!(
        m.contains("DMLC_SERVER_ID is 5 but the job has 2 servers"),
        "{m}"
    );
}

#[test]
fn a_replacement_registering_before_its_predecessor_was_seen_going_takes_over() {
    // The launcher restarts a server the moment its process ends.
    let (mut job, now) = formed_replicated();
    let mut r = server("s1b", 201);
    r.rank = Some(1);
    let back = joined(job.register(r, now).unwrap().1);
    assert_eq!((back.me.node_id, back.me.port), (S1, 201));
    assert_eq!(job.heartbeat(W0, now).unwrap(), (vec![], None));
    assert_eq!(
        job.topology.as_ref().unwrap().chains,
        [vec![0, 1], vec![0, 1]]
    );
    // Without a copy elsewhere the old one is lost, and the job with it.
    lose(&mut job, S0, now);
    let mut r = server("s0b", 202);
    r.rank = Some(0);
    assert!(matches!(job.register(r, now), Err(PsError::Rejected(_))));
}

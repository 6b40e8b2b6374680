use super::*;

fn reg(role: Role, host: &str, port: u32, rank: Option<u32>) -> Registration {
    Registration {
        role,
        host: host.into(),
        port,
        rank,
        num_workers: 2,
        num_servers: 2,
    }
}

fn worker(host: &str, id: Option<u32>) -> Registration {
    reg(Role::Worker, host, 0, id)
}

fn server(host: &str, port: u32) -> Registration {
    reg(Role::Server, host, port, None)
}

type Joining = oneshot::Receiver<Result<Membership>>;

fn join(job: &mut Job, r: Registration) -> Joining {
    job.register(r, Instant::now()).unwrap().1
}

fn joined(mut rx: Joining) -> Membership {
    rx.try_recv().expect("answered").expect("accepted")
}

fn refusal(job: &mut Job, r: Registration) -> String {
    match job.register(r, Instant::now()) {
        Err(PsError::Rejected(m)) => m,
        Err(e) => panic!("expected a refusal, got {e:?}"),
        Ok(_) => panic!("expected a refusal, got a registration"),
    }
}

/// A formed 2-worker, 2-server job: node ids 1, 2 are servers 0, 1; 3, 4 are workers 0, 1.
fn formed() -> (Job, Instant) {
    formed_with(None)
}

/// [`formed`], keeping a lost worker's place for `rejoin`.
fn formed_with(rejoin: Option<Duration>) -> (Job, Instant) {
    formed_from(Job::new(2, 2).with_rejoin(rejoin))
}

/// [`formed`], with one backup of each server's keys.
fn formed_replicated() -> (Job, Instant) {
    formed_from(Job::new(2, 2).with_replicas(1))
}

/// `job` (2 workers, 2 servers) once every node registered.
fn formed_from(mut job: Job) -> (Job, Instant) {
    let joining: Vec<Joining> = [
        server("s0", 100),
        server("s1", 101),
        worker("w0", None),
        worker("w1", None),
    ]
    .into_iter()
    .map(|r| join(&mut job, r))
    .collect();
    for rx in joining {
        joined(rx);
    }
    (job, Instant::now())
}

const S0: u32 = 1;
const S1: u32 = 2;
const W0: u32 = 3;
const W1: u32 = 4;

fn pending<T>(rx: &mut oneshot::Receiver<Result<T>>) -> bool {
    matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
}

fn answer<T: std::fmt::Debug>(rx: &mut oneshot::Receiver<Result<T>>) -> Result<T> {
    rx.try_recv().expect("answered")
}

#[test]
fn job_forms_when_the_last_node_registers() {
    let mut job = Job::new(2, 2);
    let mut w_a = join(&mut job, worker("a", None));
    let s_x = join(&mut job, server("x", 7001));
    let w_b = join(&mut job, worker("b", None));
    assert!(pending(&mut w_a), "answered before the job formed");
    let s_y = join(&mut job, server("y", 7000));
    let (a, b, x, y) = (joined(w_a), joined(w_b), joined(s_x), joined(s_y));
    assert_eq!((a.me.role, a.me.rank, a.me.port), (Role::Worker, 0, 0));
    assert_eq!((b.me.role, b.me.rank), (Role::Worker, 1));
    assert_eq!((x.me.role, x.me.rank, x.me.port), (Role::Server, 0, 7001));
    assert_eq!((y.me.role, y.me.rank, y.me.port), (Role::Server, 1, 7000));
    let table: Vec<(u32, &str, u16)> = a
        .servers
        .iter()
        .map(|s| (s.rank, s.host.as_str(), s.port))
        .collect();
    assert_eq!(table, [(0, "x", 7001), (1, "y", 7000)]);
    assert_eq!(a.servers, b.servers);
    assert_eq!((a.num_workers, a.num_servers), (2, 2));
    let mut ids: Vec<u32> = [&a, &b, &x, &y].iter().map(|m| m.me.node_id).collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3, 4]);
}

#[test]
fn worker_ids_beat_arrival_order() {
    let mut job = Job::new(3, 1);
    let r = |id| Registration {
        num_workers: 3,
        num_servers: 1,
        ..worker("w", id)
    };
    let first = join(&mut job, r(None));
    let fixed = join(&mut job, r(Some(0)));
    let second = join(&mut job, r(None));
    join(
        &mut job,
        Registration {
            num_workers: 3,
            num_servers: 1,
            ..server("s", 1)
        },
    );
    assert_eq!(joined(fixed).me.rank, 0);
    assert_eq!(joined(first).me.rank, 1);
    assert_eq!(joined(second).me.rank, 2);
}

#[test]
fn server_ids_fix_server_ranks_and_are_checked() {
    // The launcher names a server by the id it gave it; the job's rank must agree.
    let mut job = Job::new(1, 3);
    let s = |port, id| Registration {
        num_workers: 1,
        num_servers: 3,
        ..reg(Role::Server, "s", port, id)
    };
    let e = refusal(&mut job, s(7009, Some(3)));
    assert_eq!(
        e,
        "DMLC_SERVER_ID is 3 but the job has 3 servers (ids 0..2)"
    );
    let first = join(&mut job, s(7000, Some(2)));
    let e = refusal(&mut job, s(7008, Some(2)));
    assert_eq!(e, "DMLC_SERVER_ID 2 is already taken by the server on s");
    let second = join(&mut job, s(7001, None));
    let third = join(&mut job, s(7002, Some(0)));
    join(
        &mut job,
        Registration {
            num_workers: 1,
            num_servers: 3,
            ..worker("w", None)
        },
    );
    let (first, second, third) = (joined(first), joined(second), joined(third));
    assert_eq!((first.me.rank, second.me.rank, third.me.rank), (2, 1, 0));
    let ports: Vec<u16> = first.servers.iter().map(|n| n.port).collect();
    assert_eq!(
        ports,
        [7002, 7001, 7000],
        "the server table is in rank order"
    );
}

#[test]
fn registration_errors_are_one_clear_line() {
    let mut job = Job::new(2, 2);
    let e = refusal(
        &mut job,
        Registration {
            num_workers: 3,
            ..worker("a", None)
        },
    );
    assert_eq!(
        e,
        "DMLC_NUM_WORKER is 3 on this node but 2 at the scheduler"
    );
    let e = refusal(
        &mut job,
        Registration {
            num_servers: 1,
            ..server("a", 1)
        },
    );
    assert_eq!(
        e,
        "DMLC_NUM_SERVER is 1 on this node but 2 at the scheduler"
    );
    let e = refusal(&mut job, reg(Role::Scheduler, "a", 1, None));
    assert!(e.contains("DMLC_ROLE is scheduler"), "{e}");
    let e = refusal(&mut job, worker("a", Some(2)));
    assert_eq!(
        e,
        "DMLC_WORKER_ID is 2 but the job has 2 workers (ids 0..1)"
    );
    let e = refusal(&mut job, server("a", 0));
    assert!(e.contains("data-plane port"), "{e}");
    let e = refusal(&mut job, server("a", 70000));
    assert!(e.contains("70000"), "{e}");
    let e = refusal(&mut job, server(&"h".repeat(300), 1));
    assert!(e.contains("too long"), "{e}");

    let _a = join(&mut job, worker("first", Some(1)));
    let e = refusal(&mut job, worker("second", Some(1)));
    assert_eq!(
        e,
        "DMLC_WORKER_ID 1 is already taken by the worker on first"
    );
    let _b = join(&mut job, worker("third", None));
    let e = refusal(&mut job, worker("fourth", None));
    assert!(
        e.starts_with("the job has 2 worker places and all are taken"),
        "{e}"
    );
    assert!(e.contains("DMLC_NUM_WORKER"), "{e}");
    assert!(!e.contains('\n'));

    let _c = join(&mut job, server("s0", 1));
    let _d = join(&mut job, server("s1", 2));
    let e = refusal(&mut job, server("late", 3));
    assert!(e.contains("has already formed"), "{e}");
}

#[test]
fn a_withdrawn_registration_frees_its_place() {
    let mut job = Job::new(1, 1);
    let one = |r: Registration| Registration {
        num_workers: 1,
        num_servers: 1,
        ..r
    };
    let (ticket, gone) = job
        .register(one(worker("gone", Some(0))), Instant::now())
        .unwrap();
    drop(gone);
    job.withdraw(ticket);
    let w = join(&mut job, one(worker("back", Some(0))));
    join(&mut job, one(server("s", 9)));
    assert_eq!(joined(w).me.host, "back");
}

#[test]
fn a_node_gone_as_the_job_forms_is_lost() {
    let mut job = Job::new(1, 1);
    let one = |r: Registration| Registration {
        num_workers: 1,
        num_servers: 1,
        ..r
    };
    drop(join(&mut job, one(worker("w", None))));
    join(&mut job, one(server("s", 9)));
    let (lost, first) = job.heartbeat(1, Instant::now()).unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(
        first.unwrap(),
        "worker 0 on w (node 2) disconnected while the job formed"
    );
    assert!(job.ended().borrow().as_ref().unwrap().failed);
}

#[test]
fn barriers_wait_for_every_member_and_are_reusable() {
    let (mut job, now) = formed();
    for _round in 0..3 {
        let mut a = job.enter_barrier(W0, Group::Workers, now).unwrap();
        let mut s = job.enter_barrier(S0, Group::All, now).unwrap();
        assert!(pending(&mut a));
        let mut b = job.enter_barrier(W1, Group::Workers, now).unwrap();
        answer(&mut a).unwrap();
        answer(&mut b).unwrap();
        let mut rest: Vec<_> = [S1, W0, W1]
            .iter()
            .map(|&id| job.enter_barrier(id, Group::All, now).unwrap())
            .collect();
        answer(&mut s).unwrap();
        for rx in &mut rest {
            answer(rx).unwrap();
        }
    }
    // Entering twice counts once.
    let _a = job.enter_barrier(S0, Group::Servers, now).unwrap();
    let mut a = job.enter_barrier(S0, Group::Servers, now).unwrap();
    assert!(pending(&mut a));
    let mut b = job.enter_barrier(S1, Group::Servers, now).unwrap();
    answer(&mut a).unwrap();
    answer(&mut b).unwrap();
}

#[test]
fn barrier_refuses_strangers_and_outsiders() {
    let (mut job, now) = formed();
    let e = job.enter_barrier(S0, Group::Workers, now).unwrap_err();
    assert_eq!(
        e.to_string(),
        "server 0 on s0:100 is not a member of the workers barrier"
    );
    for id in [0, 5, u32::MAX] {
        let e = job.enter_barrier(id, Group::All, now).unwrap_err();
        assert!(matches!(e, PsError::Rejected(m) if m.contains("not a member of this job")));
        assert!(job.heartbeat(id, now).is_err());
        assert!(job.finish(id, now).is_err());
        assert!(job.subscribe(id, now).is_err());
        job.disconnected(id, 1, Instant::now());
    }
    let e = job.finish(S0, now).unwrap_err();
    assert!(e.to_string().starts_with("only workers finish"), "{e}");
}

#[test]
fn a_lost_node_fails_its_barriers_now_and_later() {
    let (mut job, now) = formed();
    let mut notices = job.subscribe(S0, now).unwrap().notices;
    let mut waiting = job.enter_barrier(W0, Group::Workers, now).unwrap();
    let mut all = job.enter_barrier(S0, Group::All, now).unwrap();
    let mut servers = job.enter_barrier(S0, Group::Servers, now).unwrap();
    let sub = job.subscribe(W1, now).unwrap();
    job.disconnected(W1, sub.id + 1, Instant::now()); // an older stream: nothing happens
    assert!(pending(&mut waiting));
    job.disconnected(W1, sub.id, Instant::now());
    let expected = "worker 1 on w1 (node 4) disconnected";
    for rx in [&mut waiting, &mut all] {
        assert!(matches!(answer(rx), Err(PsError::NodeLost(m)) if m == expected));
    }
    assert!(
        pending(&mut servers),
        "the servers' barrier does not wait on workers"
    );
    let e = job.enter_barrier(W0, Group::Workers, now).unwrap_err();
    assert!(matches!(e, PsError::NodeLost(m) if m == expected));
    match notices.try_recv().unwrap() {
        Notice::Lost { node, message } => {
            assert_eq!((node.role, node.rank), (Role::Worker, 1));
            assert_eq!(message, expected);
        }
        other => panic!("{other:?}"),
    }
    let (lost, first) = job.heartbeat(S1, now).unwrap();
    assert_eq!((lost.len(), first.as_deref()), (1, Some(expected)));
    // A late subscriber still hears of it.
    let backlog = job.subscribe(S1, now).unwrap().backlog;
    assert!(matches!(&backlog[..], [Notice::Lost { message, .. }] if message == expected));
    assert!(job.ended().borrow().is_none(), "worker 0 is still working");
    job.finish(W0, now).unwrap();
    let end = job.ended().borrow().clone().unwrap();
    assert_eq!((end.failed, end.reason.as_str()), (true, expected));
    assert!(matches!(answer(&mut servers), Err(PsError::Shutdown)));
}

#[test]
fn silent_nodes_are_lost_after_the_timeout() {
    let (mut job, start) = formed();
    let timeout = Duration::from_secs(10);
    let later = start + Duration::from_secs(8);
    for id in [S0, S1, W0] {
        job.heartbeat(id, later).unwrap();
    }
    job.check_timeouts(start + timeout - Duration::from_millis(1), Some(timeout));
    assert!(job.heartbeat(S0, later).unwrap().0.is_empty());
    job.check_timeouts(start + Duration::from_secs(11), Some(timeout));
    let (lost, first) = job.heartbeat(S0, later).unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(
        first.unwrap(),
        "worker 1 on w1 (node 4) stopped heart-beating for 10s"
    );
    // Entering a barrier counts as a sign of life too.
    job.enter_barrier(S1, Group::Servers, start + Duration::from_secs(15))
        .unwrap();
    job.check_timeouts(start + Duration::from_secs(19), Some(timeout));
    assert_eq!(job.heartbeat(S0, later).unwrap().0.len(), 3);
}

#[test]
fn finished_workers_end_the_job() {
    let (mut job, now) = formed();
    let mut waiting = job.enter_barrier(W1, Group::Workers, now).unwrap();
    job.finish(W0, now).unwrap();
    job.finish(W0, now).unwrap();
    let e = answer(&mut waiting).unwrap_err();
    assert_eq!(
        e.to_string(),
        "worker 0 on w0 (node 3) has finished, so the workers barrier cannot complete"
    );
    assert!(job.enter_barrier(W1, Group::All, now).is_err());
    // A finished worker's stream closing is no loss, nor is its silence.
    let sub = job.subscribe(W0, now).unwrap().id;
    job.disconnected(W0, sub, Instant::now());
    job.check_timeouts(
        now + Duration::from_secs(100),
        Some(Duration::from_secs(10)),
    );
    assert!(
        job.ended().borrow().is_some(),
        "the silent worker 1 and servers were lost"
    );

    let (mut job, now) = formed();
    let mut notices = job.subscribe(S1, now).unwrap().notices;
    job.finish(W1, now).unwrap();
    assert!(job.ended().borrow().is_none());
    // Every node hears which worker finished (servers fail the pulls that wait for it).
    let w1 = job.member(W1).unwrap().info.clone();
    assert_eq!(notices.try_recv().unwrap(), Notice::Finished(w1.clone()));
    let late = job.subscribe(S0, now).unwrap().backlog;
    assert_eq!(late, [Notice::Finished(w1.clone())]);
    job.finish(W0, now).unwrap();
    let w0 = job.member(W0).unwrap().info.clone();
    let end = Shutdown {
        failed: false,
        reason: "all 2 workers finished".into(),
    };
    assert_eq!(job.ended().borrow().clone(), Some(end.clone()));
    assert_eq!(notices.try_recv().unwrap(), Notice::Finished(w0.clone()));
    assert_eq!(notices.try_recv().unwrap(), Notice::Shutdown(end.clone()));
    // After the end: no more losses, no more barriers, late subscribers hear the end.
    let sub = job.subscribe(S0, now).unwrap().id;
    job.disconnected(S0, sub, Instant::now());
    assert!(job.heartbeat(S0, now).unwrap().0.is_empty());
    assert!(matches!(
        job.enter_barrier(S0, Group::Servers, now),
        Err(PsError::Shutdown)
    ));
    let backlog = job.subscribe(S1, now).unwrap().backlog;
    assert_eq!(
        backlog,
        [
            Notice::Finished(w1),
            Notice::Finished(w0),
            Notice::Shutdown(end)
        ]
    );
}

#[test]
fn stopping_answers_everyone_waiting() {
    let mut job = Job::new(1, 1);
    let one = |r: Registration| Registration {
        num_workers: 1,
        num_servers: 1,
        ..r
    };
    let mut w = join(&mut job, one(worker("w", None)));
    job.stop("the scheduler was stopped");
    assert!(matches!(answer(&mut w), Err(PsError::Shutdown)));
    assert!(matches!(
        job.register(one(server("s", 1)), Instant::now()),
        Err(PsError::Shutdown)
    ));
    let end = job.ended().borrow().clone().unwrap();
    assert!(end.failed);
    assert_eq!(end.reason, "the scheduler was stopped");
}

#[path = "membership/rejoin_tests.rs"]
mod rejoin;

#[path = "membership/replace_tests.rs"]
mod replace;

#[test]
fn a_job_that_does_not_form_gives_up_naming_the_missing_nodes() {
    let start = Instant::now();
    let mut job = Job::new(2, 2).with_form_timeout(Some(Duration::from_secs(300)), start);
    let waiting = [
        join(&mut job, reg(Role::Server, "s0", 100, Some(0))),
        join(&mut job, reg(Role::Server, "s1", 101, Some(1))),
        join(&mut job, worker("w0", Some(0))),
    ];
    job.check_formation(start + Duration::from_secs(299));
    assert!(job.forming(), "still within the timeout");
    job.check_formation(start + Duration::from_secs(300));
    assert!(!job.forming());
    for mut rx in waiting {
        match rx.try_recv().expect("answered") {
            Err(PsError::NodeLost(m)) => {
                assert!(m.contains("did not form within 300s"), "{m}");
                assert!(m.contains("1 of 2 workers and 2 of 2 servers"), "{m}");
                assert!(m.ends_with("missing: worker 1"), "{m}");
            }
            other => panic!("expected the formation timeout, got {other:?}"),
        }
    }
    let ended = job.ended().borrow().clone().expect("the job ended");
    assert!(ended.failed && ended.reason.contains("missing: worker 1"));
    // a late node is refused: the job is over
    assert!(matches!(
        job.register(worker("w1", Some(1)), start + Duration::from_secs(301)),
        Err(PsError::Shutdown)
    ));
}

#[test]
fn missing_nodes_without_ranks_are_counted() {
    let start = Instant::now();
    let mut job = Job::new(2, 2).with_form_timeout(Some(Duration::from_secs(1)), start);
    let mut rx = join(&mut job, worker("w0", None));
    job.check_formation(start + Duration::from_secs(2));
    match rx.try_recv().expect("answered") {
        Err(PsError::NodeLost(m)) => assert!(m.ends_with("missing: 1 worker, 2 servers"), "{m}"),
        other => panic!("expected the formation timeout, got {other:?}"),
    }
}

#[test]
fn without_a_formation_timeout_the_job_waits_and_forms() {
    let start = Instant::now();
    let mut job = Job::new(2, 2).with_form_timeout(None, start);
    let w0 = join(&mut job, worker("w0", None));
    job.check_formation(start + Duration::from_secs(100_000));
    assert!(job.forming());
    for r in [server("s0", 100), server("s1", 101), worker("w1", None)] {
        join(&mut job, r);
    }
    assert!(!job.forming());
    joined(w0);
    job.check_formation(start + Duration::from_secs(200_000)); // formed: nothing happens
    assert!(job.ended().borrow().is_none());
}

use super::*;
use std::collections::HashMap;

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

const BASE: &[(&str, &str)] = &[
    ("DMLC_PS_ROOT_URI", "127.0.0.1"),
    ("DMLC_PS_ROOT_PORT", "9091"),
    ("DMLC_NUM_SERVER", "2"),
    ("DMLC_NUM_WORKER", "3"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut v = BASE.to_vec();
    v.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
    v.extend_from_slice(extra);
    v
}

#[test]
fn reads_every_setting() {
    let cfg = Config::from_lookup(lookup(&with(&[
        ("DMLC_ROLE", "worker"),
        ("DMLC_WORKER_ID", "2"),
        ("PS_VERBOSE", "1"),
        ("PS_HEARTBEAT_INTERVAL", "0.5"),
        ("PS_HEARTBEAT_TIMEOUT", "3"),
        ("MXNET_KVSTORE_BIGARRAY_BOUND", "1000"),
        ("MXRS_SECRET", "s3cret"),
        ("DMLC_NODE_HOST", "127.0.0.1"),
        ("MXRS_ANNOUNCE", "/dev/fd/5"),
    ])))
    .unwrap();
    assert_eq!(cfg.role, Some(Role::Worker));
    assert_eq!(cfg.root_port, 9091);
    assert_eq!((cfg.num_servers, cfg.num_workers), (2, 3));
    assert_eq!(cfg.worker_id, Some(2));
    assert_eq!(cfg.verbose, 1);
    assert_eq!(cfg.heartbeat_interval, Duration::from_millis(500));
    assert_eq!(cfg.heartbeat_timeout, Duration::from_secs(3));
    assert_eq!(cfg.bigarray_bound, 1000);
    assert_eq!(cfg.secret.as_deref(), Some(&b"s3cret"[..]));
    assert_eq!(cfg.announce, Some(PathBuf::from("/dev/fd/5")));
    assert_eq!(
        cfg.node_ip().unwrap(),
        "127.0.0.1".parse::<IpAddr>().unwrap()
    );
    assert!(!format!("{cfg:?}").contains("s3cret"));
}

#[test]
fn jobs_of_two_servers_or_more_keep_one_backup_unless_told_otherwise() {
    let cfg = Config::from_lookup(lookup(&with(&[]))).unwrap();
    assert_eq!(cfg.replicas, 1, "two servers");
    let cfg = Config::from_lookup(lookup(&with(&[("DMLC_NUM_SERVER", "1")]))).unwrap();
    assert_eq!(cfg.replicas, 0, "one server");
    let cfg = Config::from_lookup(lookup(&with(&[("MXRS_REPLICAS", "0")]))).unwrap();
    assert_eq!(cfg.replicas, 0);
    let cfg = Config::from_lookup(lookup(&with(&[("MXRS_REPLICAS", "1")]))).unwrap();
    assert_eq!(cfg.replicas, 1);
    let e = error_of(&[("MXRS_REPLICAS", "2")]);
    assert!(
        e.contains("one backup of each server's keys (1) or none (0)"),
        "{e}"
    );
    let e = error_of(&[("MXRS_REPLICAS", "one")]);
    assert!(e.starts_with("MXRS_REPLICAS:"), "{e}");
}

#[test]
fn workers_may_rejoin_only_when_the_launcher_restarts_them() {
    let cfg = Config::from_lookup(lookup(&with(&[("PS_REJOIN_TIMEOUT", "5")]))).unwrap();
    assert_eq!(cfg.rejoin_timeout, None);
    let cfg = Config::from_lookup(lookup(&with(&[("MXRS_MAX_RESTARTS", "0")]))).unwrap();
    assert_eq!(cfg.rejoin_timeout, None);
    let cfg = Config::from_lookup(lookup(&with(&[("MXRS_MAX_RESTARTS", "2")]))).unwrap();
    assert_eq!(cfg.rejoin_timeout, Some(DEFAULT_REJOIN_TIMEOUT));
    let cfg = Config::from_lookup(lookup(&with(&[
        ("MXRS_MAX_RESTARTS", "1"),
        ("PS_REJOIN_TIMEOUT", "2.5"),
    ])))
    .unwrap();
    assert_eq!(cfg.rejoin_timeout, Some(Duration::from_millis(2500)));
    let e = error_of(&[("MXRS_MAX_RESTARTS", "-1")]);
    assert!(e.starts_with("MXRS_MAX_RESTARTS:"), "{e}");
    let e = error_of(&[("MXRS_MAX_RESTARTS", "1"), ("PS_REJOIN_TIMEOUT", "soon")]);
    assert!(e.starts_with("PS_REJOIN_TIMEOUT:"), "{e}");
}

#[test]
fn defaults() {
    let cfg = Config::from_lookup(lookup(BASE)).unwrap();
    assert_eq!(cfg.role, None);
    assert_eq!(cfg.heartbeat_interval, DEFAULT_HEARTBEAT_INTERVAL);
    assert_eq!(cfg.heartbeat_timeout, DEFAULT_HEARTBEAT_TIMEOUT);
    assert_eq!(cfg.bigarray_bound, DEFAULT_BIGARRAY_BOUND);
    assert!(cfg.secret.is_none());
    assert!(cfg.announce.is_none());
    // With neither DMLC_NODE_HOST nor DMLC_INTERFACE, the route to the scheduler decides.
    assert_eq!(
        cfg.node_ip().unwrap(),
        "127.0.0.1".parse::<IpAddr>().unwrap()
    );
}

fn error_of(extra: &[(&'static str, &'static str)]) -> String {
    Config::from_lookup(lookup(&with(extra)))
        .unwrap_err()
        .to_string()
}

#[test]
fn errors_name_the_variable() {
    let e = error_of(&[("DMLC_PS_ROOT_PORT", "ninety")]);
    assert!(
        e.starts_with("DMLC_PS_ROOT_PORT: 'ninety' is not a valid"),
        "{e}"
    );
    let e = error_of(&[("DMLC_PS_ROOT_PORT", "70000")]);
    assert!(e.starts_with("DMLC_PS_ROOT_PORT:"), "{e}");
    let e = error_of(&[("DMLC_NUM_WORKER", "0")]);
    assert_eq!(e, "DMLC_NUM_WORKER: must be at least 1");
    let e = error_of(&[("DMLC_ROLE", "boss")]);
    assert!(e.starts_with("DMLC_ROLE: 'boss'"), "{e}");
    let e = error_of(&[("PS_HEARTBEAT_TIMEOUT", "-1")]);
    assert!(e.starts_with("PS_HEARTBEAT_TIMEOUT:"), "{e}");
    let e = Config::from_lookup(lookup(&[("DMLC_PS_ROOT_URI", "127.0.0.1")]))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "DMLC_PS_ROOT_PORT: not set");
    let e = Config::from_lookup(lookup(&[])).unwrap_err().to_string();
    assert!(e.starts_with("DMLC_PS_ROOT_URI: not set"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn frame_and_inflight_limits_agree() {
    let cfg = Config::from_lookup(lookup(&with(&[("MXRS_MAX_INFLIGHT_BYTES", "1000")]))).unwrap();
    assert_eq!((cfg.max_frame_bytes, cfg.max_inflight_bytes), (1000, 1000));
    let cfg = Config::from_lookup(lookup(&with(&[("MXRS_MAX_FRAME_BYTES", "4096")]))).unwrap();
    assert_eq!(cfg.max_frame_bytes, 4096);
    assert_eq!(cfg.max_inflight_bytes, DEFAULT_MAX_INFLIGHT_BYTES);
    let e = error_of(&[
        ("MXRS_MAX_INFLIGHT_BYTES", "1000"),
        ("MXRS_MAX_FRAME_BYTES", "4096"),
    ]);
    assert!(
        e.starts_with("MXRS_MAX_FRAME_BYTES: 4096 is above MXRS_MAX_INFLIGHT_BYTES (1000)"),
        "{e}"
    );
    let cfg = Config::from_lookup(lookup(&with(&[("DMLC_SERVER_ID", "1")]))).unwrap();
    assert_eq!(cfg.server_id, Some(1));
}

#[test]
fn unknown_interface_is_named() {
    let cfg = Config::from_lookup(lookup(&with(&[("DMLC_INTERFACE", "nosuch0")]))).unwrap();
    let e = cfg.node_ip().unwrap_err().to_string();
    assert!(
        e.starts_with("DMLC_INTERFACE: no interface named 'nosuch0'"),
        "{e}"
    );
    let cfg = Config::from_lookup(lookup(&with(&[("DMLC_INTERFACE", "lo")]))).unwrap();
    assert_eq!(
        cfg.node_ip().unwrap(),
        "127.0.0.1".parse::<IpAddr>().unwrap()
    );
}

#[test]
fn tls_takes_all_three_files_or_none_and_a_name_only_with_them() {
    let files = [
        ("MXRS_TLS_CERT", "/c.pem"),
        ("MXRS_TLS_KEY", "/k.pem"),
        ("MXRS_TLS_CA", "/ca.pem"),
        ("MXRS_TLS_NAME", "ps.example.org"),
    ];
    let cfg = Config::from_lookup(lookup(&with(&files))).unwrap();
    let tls = cfg.tls.unwrap();
    assert_eq!((tls.cert.as_str(), tls.key.as_str()), ("/c.pem", "/k.pem"));
    assert_eq!(
        (tls.ca.as_str(), tls.name.as_deref()),
        ("/ca.pem", Some("ps.example.org"))
    );
    assert!(Config::from_lookup(lookup(BASE)).unwrap().tls.is_none());
    let e = Config::from_lookup(lookup(&with(&files[..1]))).unwrap_err();
    assert!(
        e.to_string()
            .contains("TLS needs MXRS_TLS_KEY and MXRS_TLS_CA as well"),
        "{e}"
    );
    let e = Config::from_lookup(lookup(&with(&files[3..]))).unwrap_err();
    assert!(
        matches!(&e, PsError::Config { var, .. } if var == "MXRS_TLS_NAME"),
        "{e}"
    );
}

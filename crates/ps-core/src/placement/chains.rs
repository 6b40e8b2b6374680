//! Chain replication's rule: which servers hold each placement range (the keys one server
//! holds when none is lost), its primary first, then its backups. With one replica, range
//! `r`'s chain is `[r, r + 1 mod S]`.

/// The chains of a job of `num_servers` servers with `replicas` backups per range, without the
/// servers in `lost`.
pub fn chains(num_servers: u32, replicas: u32, lost: &[u32]) -> Vec<Vec<u32>> {
    let copies = replicas.min(num_servers.saturating_sub(1)) + 1;
    (0..num_servers)
        .map(|r| {
            (0..copies)
                .map(|i| (r + i) % num_servers)
                .filter(|s| !lost.contains(s))
                .collect()
        })
        .collect()
}

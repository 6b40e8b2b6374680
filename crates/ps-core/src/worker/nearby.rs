//! Pulls from a backup beside the worker. Where a worker shares a machine (an address) with the
//! backup of a placement range but not with its primary, it pulls that range from the backup:
//! in dist_sync a backup holds each round before the primary answers it, so the value is the
//! same, and what would cross the network twice (the primary's copy to the backup, then to the
//! worker) crosses it once. Pulls go there, and a pushpull becomes a push to the primary and a
//! pull of the round it completes from the backup; pushes go to the primary, which alone
//! applies them. Without a backup, in dist_async (whose pulls do not wait for a round), or where
//! the primary is beside the worker too, everything goes to the primary.
//!
//! A pull at the backup travels on another connection than the key's pushes to its primary,
//! so nothing on the wire orders it with them: [`super::order`] keeps a key's later pushes
//! behind it until its answer is in.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The server each placement range's pulls go to, given its `chains` (primary first), every
/// server's address and the worker's own (`local`); `route` (the primaries) where no backup
/// is nearer.
pub(super) fn pull_route(
    chains: &[Vec<u32>],
    addrs: &[SocketAddr],
    local: Option<IpAddr>,
    route: &[usize],
) -> Arc<[usize]> {
    let beside =
        |s: u32| local.is_some_and(|ip| addrs.get(s as usize).is_some_and(|a| a.ip() == ip));
    route
        .iter()
        .enumerate()
        .map(|(range, &primary)| {
            let backups = chains
                .get(range)
                .map_or(&[][..], |c| c.get(1..).unwrap_or(&[]));
            match backups.iter().find(|&&b| beside(b)) {
                Some(&b) if !beside(primary as u32) => b as usize,
                _ => primary,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(ips: &[&str]) -> Vec<SocketAddr> {
        ips.iter()
            .map(|ip| format!("{ip}:9000").parse().unwrap())
            .collect()
    }

    #[test]
    fn a_range_is_pulled_from_its_backup_only_where_the_backup_alone_is_beside() {
        let chains = crate::placement::chains(3, 1, &[]); // [0,1] [1,2] [2,0]
        let a = addrs(&["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
        let here = |ip: &str| Some(ip.parse().unwrap());
        // On 10.0.0.1 (server 0): range 2, backed up on server 0, comes from it.
        assert_eq!(
            &*pull_route(&chains, &a, here("10.0.0.1"), &[0, 1, 2]),
            [0, 1, 0]
        );
        assert_eq!(
            &*pull_route(&chains, &a, here("10.0.0.2"), &[0, 1, 2]),
            [1, 1, 2]
        );
        // Nowhere near, or not known: every range from its primary.
        assert_eq!(
            &*pull_route(&chains, &a, here("10.0.0.9"), &[0, 1, 2]),
            [0, 1, 2]
        );
        assert_eq!(&*pull_route(&chains, &a, None, &[0, 1, 2]), [0, 1, 2]);
        // Everything on one machine (loopback): the primaries.
        let one = addrs(&["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
        assert_eq!(
            &*pull_route(&chains, &one, here("127.0.0.1"), &[0, 1, 2]),
            [0, 1, 2]
        );
        // Server 1 lost: range 1 went to server 2 and has no backup left.
        let lost = crate::placement::chains(3, 1, &[1]); // [0] [2] [2,0]
        assert_eq!(
            &*pull_route(&lost, &a, here("10.0.0.1"), &[0, 2, 2]),
            [0, 2, 0]
        );
        // Without backups: the primaries.
        let none = crate::placement::chains(3, 0, &[]);
        assert_eq!(
            &*pull_route(&none, &a, here("10.0.0.1"), &[0, 1, 2]),
            [0, 1, 2]
        );
    }
}

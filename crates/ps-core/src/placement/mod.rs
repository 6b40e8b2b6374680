//! Placement: where keys live and who holds them. One concept, below the scheduler, the servers
//! and the workers, which all read it:
//!
//! - `partition`: which server (placement range) holds which key or slice of a big key (row
//!   ranges for a row-sparse key), as workers and servers compute it alike.
//! - `chains`: the rule that gives each placement range its servers, primary first, then
//!   backups (`MXRS_REPLICAS`).
//! - `topology`: the job's nodes ([`NodeInfo`]) and the [`Topology`] the scheduler decides
//!   (the chains without lost servers, replacements added; its epoch grows with each change).

mod chains;
mod partition;
mod topology;

pub use chains::chains;
pub use partition::{PIECE_BYTES, Part, Partitioner};
pub use topology::{NodeInfo, Topology, resolve};

//! ps-core: the parameter server of mxrs.
//!
//! One scheduler, S servers and W workers train a model together: workers push gradients and pull
//! weights, servers sum the pushes of a round and apply the optimizer, the scheduler introduces the
//! nodes to each other and watches that they stay alive.
//!
//! # Layout
//! - [`error`]: [`PsError`], the one error type, and [`Result`].
//! - [`config`]: node settings from MXNet's `DMLC_*`/`PS_*` variables and `MXRS_*`.
//! - [`cli`]: the same settings as command-line flags of the binaries.
//! - [`dtype`]: element types and their conversions (float16/bfloat16 summed in float32).
//! - [`codec`]: gradient compression (MXNet's 2-bit quantisation, float16, bfloat16): the
//!   worker's encoding and the server's decoding of pushed values.
//! - [`protocol`]: data-plane frames and connections, the control-plane gRPC types, the
//!   shared-secret handshake both planes open with.
//! - [`placement`]: which server holds which key or slice of a big key (row ranges for a
//!   row-sparse key), the chains of servers holding each range, and the job's topology.
//! - [`updater`]: optimizers applied on the servers (SGD, NAG, Adam, AdaGrad, RMSProp, Signum,
//!   Adamax, AdaDelta, FTML, FTRL), to whole pieces or to the rows a row-sparse round carried.
//! - [`scheduler`]: registration, ranks, barriers, heartbeats, node loss, orderly shutdown; and
//!   the control client every node uses to talk to it.
//! - [`server`]: sharded key store, sync merging, async apply, the data-plane request handlers.
//! - [`worker`]: the client a training process uses: push/pull tickets, slicing, barriers;
//!   row-sparse keys (`init_rows`, `push_rows`, `pull_rows`), whose messages carry only the
//!   rows a step touched.
//! - [`node`]: logging and the entry points that run a whole scheduler or server process.
//! - `task`: `AbortOnDrop`, a spawned task tied to the lifetime of its owner.

#![forbid(unsafe_code)]

pub mod cli;
pub mod codec;
pub mod config;
pub mod dtype;
pub mod error;
pub mod metrics;
pub mod node;
pub mod placement;
pub mod protocol;
pub mod scheduler;
pub mod server;
mod task;
pub mod updater;
mod warm;
pub mod worker;

pub use config::{Config, Role};
pub use dtype::DType;
pub use error::{PsError, Result};

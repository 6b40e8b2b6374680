//! Wire protocols. The data plane is raw TCP with length-prefixed frames ([`frame`],
//! [`connection`]; a server's push counters in [`stats`]); the control plane is gRPC generated from `proto/control.proto` ([`pb`]).
//! Both open with a shared-secret handshake, inside mutual TLS when a node has it ([`tls`]) (`auth`, crate-private like the buffer `pool` and the
//! optimizer-state blob format `states`: the outside reaches them through [`transport`], the
//! server and the worker).

pub(crate) mod auth;
pub mod connection;
pub mod frame;
pub(crate) mod pool;
pub(crate) mod states;
pub mod stats;
pub mod tls;
pub mod transport;

/// Generated gRPC types and services of the control plane.
#[allow(clippy::all, missing_docs, unused_qualifications)]
pub mod pb {
    tonic::include_proto!("mxrs.control");
}

//! Wire protocols. The data plane is raw TCP with length-prefixed frames ([`frame`],
//! [`connection`]); the control plane is gRPC generated from `proto/control.proto` ([`pb`]).
//! Both open with the shared-secret handshake of [`auth`].

pub mod auth;
pub mod connection;
pub mod frame;
pub mod pool;
pub mod states;
pub mod transport;

/// Generated gRPC types and services of the control plane.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("mxrs.control");
}

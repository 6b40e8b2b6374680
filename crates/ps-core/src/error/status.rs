//! [`PsError`] over the control plane: a gRPC status whose code says roughly what went wrong and
//! whose details ([`pb::ErrorDetail`]) name the exact variant, so the caller gets the error back as
//! it was raised. A status without those details (a transport failure, another gRPC peer) is
//! read by its code alone.

use std::io;

use prost::Message;
use tonic::{Code, Status};

use super::PsError;
use crate::protocol::pb::{ErrorDetail, ErrorKind};

impl From<PsError> for Status {
    fn from(err: PsError) -> Self {
        let message = err.to_string();
        let code = match &err {
            PsError::NodeLost(_) => Code::Aborted,
            PsError::Shutdown => Code::Cancelled,
            PsError::Config { .. } | PsError::Rejected(_) => Code::InvalidArgument,
            PsError::Auth(_) => Code::Unauthenticated,
            _ => Code::Internal,
        };
        let detail = detail_of(err);
        Status::with_details(code, message, detail.encode_to_vec().into())
    }
}

impl From<Status> for PsError {
    fn from(status: Status) -> Self {
        if let Some(err) = from_detail(status.details()) {
            return err;
        }
        let message = status.message().to_string();
        match status.code() {
            Code::Aborted => PsError::NodeLost(message),
            Code::Cancelled => PsError::Shutdown,
            Code::InvalidArgument | Code::FailedPrecondition => PsError::Rejected(message),
            _ => PsError::Rpc(message),
        }
    }
}

/// The variant of `err` and its own fields, as sent in a status's details.
fn detail_of(err: PsError) -> ErrorDetail {
    let (kind, message, context) = match err {
        PsError::Config { var, reason } => (ErrorKind::Config, reason, var.into_owned()),
        PsError::Io { context, source } => (ErrorKind::Io, source.to_string(), context),
        PsError::Auth(m) => (ErrorKind::Auth, m, String::new()),
        PsError::Protocol(m) => (ErrorKind::Protocol, m, String::new()),
        PsError::ShapeMismatch(m) => (ErrorKind::ShapeMismatch, m, String::new()),
        PsError::UnknownKey(m) => (ErrorKind::UnknownKey, m, String::new()),
        PsError::Rejected(m) => (ErrorKind::Rejected, m, String::new()),
        PsError::Optimizer(m) => (ErrorKind::Optimizer, m, String::new()),
        PsError::InvalidRows(m) => (ErrorKind::InvalidRows, m, String::new()),
        PsError::NodeLost(m) => (ErrorKind::NodeLost, m, String::new()),
        PsError::Rpc(m) => (ErrorKind::Rpc, m, String::new()),
        PsError::Shutdown => (ErrorKind::Shutdown, String::new(), String::new()),
    };
    ErrorDetail {
        kind: kind.into(),
        message,
        context,
    }
}

/// The error a status's details name; `None` when they are absent or not ours.
fn from_detail(details: &[u8]) -> Option<PsError> {
    if details.is_empty() {
        return None;
    }
    let ErrorDetail {
        kind,
        message,
        context,
    } = ErrorDetail::decode(details).ok()?;
    Some(match ErrorKind::try_from(kind).ok()? {
        ErrorKind::Unspecified => return None,
        ErrorKind::Config => PsError::Config {
            var: context.into(),
            reason: message,
        },
        // The peer's I/O error is known here only by its text.
        ErrorKind::Io => PsError::io(context, io::Error::other(message)),
        ErrorKind::Auth => PsError::Auth(message),
        ErrorKind::Protocol => PsError::Protocol(message),
        ErrorKind::ShapeMismatch => PsError::ShapeMismatch(message),
        ErrorKind::UnknownKey => PsError::UnknownKey(message),
        ErrorKind::Rejected => PsError::Rejected(message),
        ErrorKind::Optimizer => PsError::Optimizer(message),
        ErrorKind::InvalidRows => PsError::InvalidRows(message),
        ErrorKind::NodeLost => PsError::NodeLost(message),
        ErrorKind::Rpc => PsError::Rpc(message),
        ErrorKind::Shutdown => PsError::Shutdown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each variant, with text that would fool any reading of the message.
    fn every_variant() -> Vec<PsError> {
        vec![
            PsError::Config {
                var: "DMLC_NUM_WORKER".into(),
                reason: "node lost: must be at least 1".into(),
            },
            PsError::io(
                "binding 127.0.0.1:9",
                io::Error::new(io::ErrorKind::AddrInUse, "address in use"),
            ),
            PsError::Auth("the peer does not know the secret".into()),
            PsError::Protocol("unknown op 99".into()),
            PsError::ShapeMismatch("key 3: pushed float32 [2] but the key holds [3]".into()),
            PsError::UnknownKey("key 7 has not been initialised".into()),
            PsError::Rejected("node lost: only the message says so".into()),
            PsError::Optimizer("optimizer 'sgd': bad 'momentum'".into()),
            PsError::InvalidRows("key 3: row id 9 is outside its 4 rows".into()),
            PsError::NodeLost("worker 1 on 127.0.0.1 stopped heart-beating".into()),
            PsError::Rpc("the scheduler did not answer".into()),
            PsError::Shutdown,
        ]
    }

    /// `back` is the variant `kind` with the text `before`.
    fn assert_came_back(before: &str, kind: std::mem::Discriminant<PsError>, back: PsError) {
        assert_eq!(
            std::mem::discriminant(&back),
            kind,
            "{before} came back as {back:?}"
        );
        assert_eq!(back.to_string(), before);
    }

    #[test]
    fn every_variant_survives_a_status_round_trip() {
        for err in every_variant() {
            let (before, kind) = (err.to_string(), std::mem::discriminant(&err));
            let status = Status::from(err);
            assert_eq!(status.message(), before);
            assert_came_back(&before, kind, PsError::from(status));
        }
    }

    #[test]
    fn the_details_survive_the_wire_encoding_of_a_status() {
        for err in every_variant() {
            let (before, kind) = (err.to_string(), std::mem::discriminant(&err));
            let response = Status::from(err).into_http::<()>();
            let back = PsError::from(Status::from_header_map(response.headers()).unwrap());
            assert_came_back(&before, kind, back);
        }
    }

    #[test]
    fn a_config_error_keeps_the_setting_it_names() {
        let err = PsError::Config {
            var: "MXRS_SECRET".into(),
            reason: "is empty".into(),
        };
        match PsError::from(Status::from(err)) {
            PsError::Config { var, reason } => {
                assert_eq!((var.as_ref(), reason.as_str()), ("MXRS_SECRET", "is empty"));
            }
            other => panic!("came back as {other:?}"),
        }
    }

    #[test]
    fn a_status_without_details_is_read_by_its_code() {
        let read = |code, msg: &str| PsError::from(Status::new(code, msg));
        assert!(matches!(read(Code::Aborted, "gone"), PsError::NodeLost(m) if m == "gone"));
        assert!(matches!(read(Code::Cancelled, "x"), PsError::Shutdown));
        assert!(matches!(read(Code::FailedPrecondition, "no"), PsError::Rejected(m) if m == "no"));
        // A message alone never decides the kind.
        let lost = read(Code::Unavailable, "node lost: worker 1");
        assert!(matches!(lost, PsError::Rpc(_)), "{lost:?}");
    }

    #[test]
    fn details_that_are_not_ours_fall_back_on_the_code() {
        let status = Status::with_details(Code::Aborted, "gone", vec![0xFF, 0x01].into());
        assert!(matches!(PsError::from(status), PsError::NodeLost(m) if m == "gone"));
    }
}

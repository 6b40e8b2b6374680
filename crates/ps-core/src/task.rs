//! Tasks tied to their owner's lifetime.

use tokio::task::JoinHandle;

/// A spawned task that is aborted when this handle is dropped, so that dropping the future or
/// the object that owns it leaves no task behind. The inner handle can still be awaited
/// (`&mut handle.0`).
#[derive(Debug)]
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

//! worker (in progress)

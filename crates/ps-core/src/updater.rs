//! updater (in progress)

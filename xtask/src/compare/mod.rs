//! `cargo xtask compare`.

pub mod stats;

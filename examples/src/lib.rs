//! Examples live in src/bin; what several of them share lives here.

pub mod serve_args;

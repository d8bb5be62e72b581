//! The ways requests arrive: Streamable HTTP and stdio. A transport depends
//! on the dispatcher, never the reverse.

pub(crate) mod drain;
pub mod http;
mod legacy;
pub mod stdio;

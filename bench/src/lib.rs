//! Shared pieces of the toolwire benchmarks: the requests a 2026-07-28
//! client sends and the checks on what comes back ([`workload`]), the
//! toolwire server every toolwire figure is taken from ([`servers`]), the
//! HTTP load generator ([`loadgen`]), open listen streams ([`listen`]),
//! server processes and their memory ([`process`]), the tables
//! ([`report`]), and hyper-echo's answers to what is not a call
//! ([`echo_other`]).

pub mod echo_other;
pub mod listen;
pub mod loadgen;
pub mod process;
pub mod report;
pub mod servers;
pub mod workload;

/// Makes mimalloc the global allocator of the server binary it is used in,
/// with `--features mimalloc` (toolwire's, rmcp's and hyper's servers
/// alike); without the feature they keep glibc's malloc. Not in this library
/// itself: `listen-heap` has a counting allocator of its own.
#[macro_export]
macro_rules! allocator_from_features {
    () => {
        #[cfg(feature = "mimalloc")]
        #[global_allocator]
        static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
    };
}

/// Every network address used by the benchmarks is on this host.
pub const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// Raises this process's open-file soft limit to its hard limit (children
/// inherit it) and returns the new soft limit.
pub fn raise_nofile_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(error) => {
            eprintln!("warning: could not raise RLIMIT_NOFILE: {error}");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    }
}

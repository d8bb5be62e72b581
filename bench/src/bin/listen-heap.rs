//! What one open `subscriptions/listen` stream holds on toolwire's heap, by
//! allocation size: a server and a client in one process, each on its own
//! runtime, and a global allocator that counts what the server's threads
//! allocate and free.
//!
//! ```text
//! listen-heap [h1|h2] [--streams N] [--connections N] [--trace SIZE,SIZE...]
//! ```
//!
//! Opens 50 streams and closes them (warm-up), then opens `--streams`
//! (2,000) more, over HTTP/1.1 (one connection each) or over HTTP/2
//! (`--connections`, 20, shared round robin), and prints the live heap
//! growth per stream and the allocation sizes that make it up. `--trace`
//! prints where the first allocation of each given size was made (a
//! backtrace; build with line tables, as the release profile here does).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::time::Duration;

use toolwire_bench::listen;
use toolwire_bench::loadgen::H2Sender;
use toolwire_server::http::{HttpConfig, HttpServer};

/// Allocation sizes counted one by one; larger ones share the last slot.
const LARGEST: usize = 1 << 16;

static LIVE: [AtomicI64; LARGEST + 1] = [const { AtomicI64::new(0) }; LARGEST + 1];
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static TRACING: AtomicBool = AtomicBool::new(false);
static TRACE_SIZES: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static TRACES: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

thread_local! {
    /// Set on the server runtime's threads: only their allocations count.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    /// Set while a backtrace is taken, so its own allocations do not count.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

struct Counting;

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false) && !INSIDE.try_with(Cell::get).unwrap_or(true)
}

fn record(size: usize, change: i64) {
    LIVE[size.min(LARGEST)].fetch_add(change, Relaxed);
    LIVE_BYTES.fetch_add(change * size as i64, Relaxed);
}

/// Keeps a backtrace of the first allocation of each size asked for.
fn maybe_trace(size: usize) {
    if !TRACING.load(Relaxed) {
        return;
    }
    INSIDE.with(|inside| inside.set(true));
    let wanted = TRACE_SIZES.lock().unwrap().contains(&size);
    if wanted && !TRACES.lock().unwrap().iter().any(|(s, _)| *s == size) {
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        TRACES.lock().unwrap().push((size, trace));
    }
    INSIDE.with(|inside| inside.set(false));
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// counting touches only atomics and thread-locals.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            record(layout.size(), 1);
            maybe_trace(layout.size());
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            record(layout.size(), -1);
        }
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            record(layout.size(), -1);
            record(new_size, 1);
            maybe_trace(new_size);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct Options {
    http2: bool,
    streams: usize,
    connections: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        http2: true,
        streams: 2_000,
        connections: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| {
            args.next()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|n| (1..=100_000).contains(n))
                .ok_or(format!("{name} needs a number from 1 to 100,000"))
        };
        match arg.as_str() {
            "h1" => options.http2 = false,
            "h2" => options.http2 = true,
            "--streams" => options.streams = number("--streams")?,
            "--connections" => options.connections = number("--connections")?,
            "--trace" => {
                let sizes = args.next().ok_or("--trace needs sizes")?;
                let sizes: Result<Vec<usize>, _> = sizes.split(',').map(str::parse).collect();
                *TRACE_SIZES.lock().unwrap() = sizes.map_err(|e| format!("--trace: {e}"))?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

fn main() {
    let options = parse_args().unwrap_or_else(|message| {
        eprintln!(
            "{message}\nusage: listen-heap [h1|h2] [--streams N] [--connections N] [--trace SIZE,...]"
        );
        std::process::exit(2);
    });
    toolwire_bench::raise_nofile_limit();
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(|| COUNTED.with(|counted| counted.set(true)))
        .build()
        .unwrap();
    let server = toolwire_server::Server::builder("listen-heap", "1")
        .max_subscriptions_per_principal(options.streams + 100)
        .build()
        .unwrap();
    let http = server_runtime
        .block_on(HttpServer::bind(
            SocketAddr::new(toolwire_bench::LOOPBACK, 0),
            server,
            HttpConfig::new(),
        ))
        .unwrap();
    let addr = http.local_addr();
    server_runtime.spawn(http.run());
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    client_runtime.block_on(measure(addr, &options));
}

async fn measure(addr: SocketAddr, options: &Options) {
    let connections = if options.http2 {
        options.connections
    } else {
        0
    };
    let senders = listen::h2_connections(addr, connections).await.unwrap();
    let warm = open_streams(addr, &senders, 0..50).await;
    drop(warm);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before: Vec<i64> = LIVE.iter().map(|n| n.load(Relaxed)).collect();
    let before_bytes = LIVE_BYTES.load(Relaxed);
    TRACING.store(true, Relaxed);
    let held = open_streams(addr, &senders, 1_000..1_000 + options.streams as u64).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    TRACING.store(false, Relaxed);
    let opened = held.len() as f64;
    let via = if options.http2 {
        format!("HTTP/2, {connections} connections")
    } else {
        "HTTP/1.1, a connection each".to_owned()
    };
    println!(
        "{} listen streams ({via}): live heap growth {:.0} bytes per stream\n",
        held.len(),
        (LIVE_BYTES.load(Relaxed) - before_bytes) as f64 / opened
    );
    println!("| allocation size | allocations per stream | bytes per stream |");
    println!("|---:|---:|---:|");
    let mut sizes: Vec<(usize, i64)> = (0..=LARGEST)
        .map(|size| (size, LIVE[size].load(Relaxed) - before[size]))
        .filter(|(_, count)| *count != 0)
        .collect();
    sizes.sort_by_key(|(size, count)| std::cmp::Reverse(*size as i64 * count));
    for (size, count) in sizes.iter().take(30) {
        println!(
            "| {size} | {:.2} | {:.0} |",
            *count as f64 / opened,
            (*size as i64 * count) as f64 / opened
        );
    }
    for (size, trace) in TRACES.lock().unwrap().iter() {
        let frames: Vec<&str> = trace
            .lines()
            .filter(|line| !line.trim_start().starts_with("at "))
            .skip_while(|line| !line.contains("maybe_trace"))
            .take(24)
            .collect();
        println!("\nfirst allocation of {size} bytes:\n{}", frames.join("\n"));
    }
    drop(held);
}

/// Opens listen streams `ids`, 100 at a time, and keeps them open.
async fn open_streams(
    addr: SocketAddr,
    senders: &[H2Sender],
    ids: std::ops::Range<u64>,
) -> Vec<listen::OpenStream> {
    let ids: Vec<u64> = ids.collect();
    let mut held = Vec::with_capacity(ids.len());
    for batch in ids.chunks(100) {
        let opening: Vec<_> = batch
            .iter()
            .map(|&id| tokio::spawn(listen::open(addr, senders, id)))
            .collect();
        for task in opening {
            held.push(task.await.unwrap().unwrap());
        }
    }
    held
}

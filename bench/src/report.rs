//! Tables: one row per server (or variant) from every round of a run, and
//! the ratios between rows of the same run.

use hdrhistogram::Histogram;

use crate::loadgen::{LoadResult, new_histogram};
use crate::process::Memory;

/// One measured run of one server.
#[derive(Debug)]
pub struct Sample {
    /// The load it took.
    pub result: LoadResult,
    /// Its memory once started, before any load.
    pub idle: Memory,
    /// Its memory after the load (`peak` is its high-water mark).
    pub after: Memory,
    /// The CPU time it used from start to the end of the load.
    pub server_cpu: std::time::Duration,
}

/// All rounds of one server in one run.
#[derive(Debug)]
pub struct Row {
    /// What ran.
    pub label: String,
    /// Its rounds, in order.
    pub samples: Vec<Sample>,
}

/// The figures of one row.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Mean of the rounds' throughput.
    pub rps: f64,
    /// Each round's throughput.
    pub rps_rounds: Vec<f64>,
    /// Latency percentiles over all rounds, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Errors over all rounds (measured window).
    pub errors: u64,
    /// Errors during warm-ups.
    pub warmup_errors: u64,
    /// Largest idle RSS, bytes.
    pub idle_rss: u64,
    /// Largest peak RSS (VmHWM), bytes.
    pub peak_rss: u64,
    /// Largest anonymous RSS after the load, bytes.
    pub anon_rss: u64,
    /// Server CPU time per reply (all rounds, warm-up included), µs.
    pub cpu_us_per_reply: f64,
}

impl Row {
    /// Summarises the row.
    pub fn summary(&self) -> Summary {
        let mut latency: Histogram<u64> = new_histogram();
        let mut summary = Summary {
            rps: 0.0,
            rps_rounds: Vec::new(),
            p50_ms: 0.0,
            p99_ms: 0.0,
            p999_ms: 0.0,
            errors: 0,
            warmup_errors: 0,
            idle_rss: 0,
            peak_rss: 0,
            anon_rss: 0,
            cpu_us_per_reply: 0.0,
        };
        let mut cpu = 0.0;
        let mut replies = 0u64;
        for sample in &self.samples {
            summary.rps_rounds.push(sample.result.rps());
            let _ = latency.add(&sample.result.latency);
            summary.errors += sample.result.errors;
            summary.warmup_errors += sample.result.warmup_errors;
            summary.idle_rss = summary.idle_rss.max(sample.idle.rss);
            summary.peak_rss = summary.peak_rss.max(sample.after.peak);
            summary.anon_rss = summary.anon_rss.max(sample.after.anon);
            cpu += sample.server_cpu.as_secs_f64();
            replies += sample.result.replies;
        }
        if replies > 0 {
            summary.cpu_us_per_reply = cpu * 1e6 / replies as f64;
        }
        if !summary.rps_rounds.is_empty() {
            summary.rps = summary.rps_rounds.iter().sum::<f64>() / summary.rps_rounds.len() as f64;
        }
        let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
        if !latency.is_empty() {
            summary.p50_ms = ms(0.50);
            summary.p99_ms = ms(0.99);
            summary.p999_ms = ms(0.999);
        }
        summary
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// A Markdown table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str("| server | req/s (mean) | req/s per round | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/req | idle RSS MiB | peak RSS MiB | anon RSS after MiB |\n");
    out.push_str("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        let s = row.summary();
        let rounds: Vec<String> = s.rps_rounds.iter().map(|r| format!("{r:.0}")).collect();
        let errors = if s.warmup_errors > 0 {
            format!("{} (+{} in warm-up)", s.errors, s.warmup_errors)
        } else {
            s.errors.to_string()
        };
        out.push_str(&format!(
            "| {} | {:.0} | {} | {:.3} | {:.3} | {:.3} | {} | {:.0} | {} | {} | {} |\n",
            row.label,
            s.rps,
            rounds.join(", "),
            s.p50_ms,
            s.p99_ms,
            s.p999_ms,
            errors,
            s.cpu_us_per_reply,
            mib(s.idle_rss),
            mib(s.peak_rss),
            mib(s.anon_rss),
        ));
    }
    out
}

/// `a ÷ b` with two decimals, or `n/a`.
pub fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.2}", a / b)
    } else {
        "n/a".to_owned()
    }
}

/// The ratios of row `a` to row `b`: throughput, p50, p99, server CPU per
/// request, peak RSS.
pub fn ratios(a: &Row, b: &Row) -> String {
    let (x, y) = (a.summary(), b.summary());
    format!(
        "{} ÷ {}: throughput {}×, p50 {}×, p99 {}×, server CPU per request {}×, peak RSS {}×, anon RSS {}×",
        a.label,
        b.label,
        ratio(x.rps, y.rps),
        ratio(x.p50_ms, y.p50_ms),
        ratio(x.p99_ms, y.p99_ms),
        ratio(x.cpu_us_per_reply, y.cpu_us_per_reply),
        ratio(x.peak_rss as f64, y.peak_rss as f64),
        ratio(x.anon_rss as f64, y.anon_rss as f64),
    )
}

/// The first errors of every row, if any.
pub fn error_samples(rows: &[Row]) -> String {
    let mut out = String::new();
    for row in rows {
        for sample in &row.samples {
            for error in &sample.result.sample_errors {
                out.push_str(&format!("  {}: {error}\n", row.label));
            }
        }
    }
    out
}

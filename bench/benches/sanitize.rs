//! Criterion micro-benchmarks of the output sanitiser on a 64 KiB tool
//! result (`SanitizePolicy::sanitize_result`, every rule as the server
//! applies it to a `tools/call` result):
//!
//! - `sanitize/ascii_64k`: one 64 KiB text block of pure ASCII (the fast path);
//! - `sanitize/unicode_64k`: 64 KiB of prose in several scripts with emoji,
//!   ZWJ sequences and `❤️`, nothing to remove (the scan, no allocation
//!   unless a ZWJ sequence or selector needs a closer look);
//! - `sanitize/hidden_64k`: the same prose with an invisible character
//!   (bidi control, tag run, zero-width space) every ~150 bytes: the slow path;
//! - `sanitize/structured_64k`: a short text plus `structuredContent` of
//!   512 strings of 128 bytes (the walk over every string);
//! - `*_invisible_off`: the same with `strip_invisible(false)`, so the
//!   difference is the invisible-text rule alone.
//!
//! Each iteration sanitises a fresh clone of the result; the clone is made
//! outside the timed part (`iter_batched`).
//!
//! Run with `cargo bench --manifest-path bench/Cargo.toml --bench sanitize`.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolwire_protocol::CallToolResult;
use toolwire_server::SanitizePolicy;

const SIZE: usize = 64 * 1024;

fn repeat_to(unit: &str, size: usize) -> String {
    let mut text = String::with_capacity(size + unit.len());
    while text.len() + unit.len() <= size {
        text.push_str(unit);
    }
    text
}

fn ascii() -> String {
    repeat_to(
        "The quick brown fox jumps over the lazy dog; order #1234 shipped.\n",
        SIZE,
    )
}

const PROSE: &str = "Grüße aus Köln — “quoted” text… 日本語のテキスト، العربية ✓ \
    👨\u{200D}👩\u{200D}👧 ❤\u{FE0F} ok.\n";

fn unicode() -> String {
    repeat_to(PROSE, SIZE)
}

fn hidden() -> String {
    let unit = format!(
        "{PROSE}a\u{202E}b c\u{E0049}\u{E0047}\u{E004E} d\u{200B}e {}",
        "plain ascii filler, "
    );
    repeat_to(&unit, SIZE)
}

fn structured() -> CallToolResult {
    let item = "x".repeat(120) + "ünïcode";
    let items: Vec<Value> = (0..512).map(|_| Value::String(item.clone())).collect();
    CallToolResult {
        structured_content: Some(json!({ "items": items })),
        ..CallToolResult::text("see structuredContent")
    }
}

fn sanitize(c: &mut Criterion) {
    let on = SanitizePolicy::default();
    let invisible_off = SanitizePolicy::default().strip_invisible(false);
    // The fast path borrows: nothing is allocated for ASCII or clean text.
    assert!(matches!(
        on.clean_text(&ascii()).0,
        std::borrow::Cow::Borrowed(_)
    ));
    assert!(matches!(
        on.clean_text(&unicode()).0,
        std::borrow::Cow::Borrowed(_)
    ));
    let cases = [
        ("ascii_64k", CallToolResult::text(ascii())),
        ("unicode_64k", CallToolResult::text(unicode())),
        ("hidden_64k", CallToolResult::text(hidden())),
        ("structured_64k", structured()),
    ];
    let mut group = c.benchmark_group("sanitize");
    group.throughput(criterion::Throughput::Bytes(SIZE as u64));
    for (name, result) in &cases {
        for (suffix, policy) in [("", &on), ("_invisible_off", &invisible_off)] {
            group.bench_function(format!("{name}{suffix}"), |b| {
                b.iter_batched(
                    || result.clone(),
                    |mut result| {
                        let report = policy.sanitize_result("bench", &mut result);
                        black_box((result, report))
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, sanitize);
criterion_main!(benches);

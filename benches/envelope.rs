//! Criterion benchmarks of the hot paths: the envelope core (rows/s), the result mapping of a
//! large CallToolResult (MB/s of JSON input), and reading message lines (MB/s).
//!
//! Run: `cargo bench --bench envelope`. Figures are recorded in README.md / BENCHMARKS.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcp_envelope::config::MediaMode;
use mcp_envelope::envelope::{summarize_tool_result, ToolResult};
use mcp_envelope::jsonrpc::LineReader;
use mcp_envelope::outcome::{map_outcome, map_raw_response, MappingContext, Outcome};
use serde_json::{json, Value};

fn rows(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"id": i, "name": format!("row-{i}"), "ok": i % 2 == 0, "score": i as f64 / 3.0}))
        .collect()
}

/// The seed's core on 100,000 rows: the whole fill (budget large enough for every row) and a
/// budget of 2,000 characters (most rows omitted).
fn envelope_core(c: &mut Criterion) {
    let n = 100_000;
    let input = json!({"call_id": "b", "tool": "bench", "rows": rows(n)});
    let result = ToolResult::from_json(&input).unwrap();
    let mut group = c.benchmark_group("envelope_core");
    group.throughput(Throughput::Elements(n as u64));
    for budget in [2_000usize, usize::MAX] {
        let label = if budget == usize::MAX {
            "all_rows".to_string()
        } else {
            budget.to_string()
        };
        group.bench_with_input(
            BenchmarkId::new("100k_rows_budget", label),
            &budget,
            |b, &budget| b.iter(|| black_box(summarize_tool_result(black_box(&result), budget))),
        );
    }
    group.finish();
}

/// The mapping of a CallToolResult (already parsed) to the envelope: structuredContent with
/// many rows, and one large multi-line text block.
fn result_mapping(c: &mut Criterion) {
    let structured = json!({"content": [], "structuredContent": {"rows": rows(200_000)}});
    let structured_bytes = serde_json::to_vec(&structured).unwrap().len();
    let text: String = (0..200_000)
        .map(|i| format!("line {i} of a long plain-text tool result\n"))
        .collect();
    let text_result = json!({"content": [{"type": "text", "text": text}]});
    let text_bytes = text.len();
    let ctx = MappingContext {
        call_id: "1",
        tool: "bench",
        server: "bench",
        budget: mcp_envelope::budget::Budget::chars(2_000),
        text: mcp_envelope::outcome::TextShape {
            long_rows: mcp_envelope::budget::LongRows::Keep,
            ..Default::default()
        },
        media: MediaMode::Passthrough,
    };
    let mut group = c.benchmark_group("result_mapping");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(structured_bytes as u64));
    let outcome = Outcome::Result { result: structured };
    group.bench_function("structured_200k_rows_budget_2000", |b| {
        b.iter(|| black_box(map_outcome(black_box(&outcome), &ctx)))
    });
    let ctx_all = MappingContext {
        budget: mcp_envelope::budget::Budget::chars(usize::MAX),
        ..ctx
    };
    group.bench_function("structured_200k_rows_all_rows", |b| {
        b.iter(|| black_box(map_outcome(black_box(&outcome), &ctx_all)))
    });
    group.throughput(Throughput::Bytes(text_bytes as u64));
    let outcome = Outcome::Result {
        result: text_result,
    };
    group.bench_function("text_200k_lines_budget_2000", |b| {
        b.iter(|| black_box(map_outcome(black_box(&outcome), &ctx)))
    });
    group.finish();
}

/// Frames `data` with a [`LineReader`] (256 KiB buffer, as the proxy reads) and hands every
/// frame to `f`.
fn for_each_frame(
    rt: &tokio::runtime::Runtime,
    data: &[u8],
    mut f: impl FnMut(mcp_envelope::jsonrpc::Frame),
) {
    rt.block_on(async {
        let mut reader = LineReader::new(
            tokio::io::BufReader::with_capacity(256 * 1024, data),
            64 << 20,
        );
        while let Some(frame) = reader.next_frame().await.unwrap() {
            f(frame);
        }
    })
}

/// Parsing a large response line as the proxy does: framing + JSON parse.
fn message_lines(c: &mut Criterion) {
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "structuredContent": {"rows": rows(100_000)}}});
    let mut line = serde_json::to_vec(&response).unwrap();
    line.push(b'\n');
    let small: Vec<u8> = (0..10_000)
        .flat_map(|i| {
            let mut l = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}})).unwrap();
            l.push(b'\n');
            l
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("message_lines");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(line.len() as u64));
    group.bench_function("frame_and_parse_one_large_response", |b| {
        b.iter(|| {
            for_each_frame(&rt, &line, |frame| {
                if let mcp_envelope::jsonrpc::Frame::Line(l) = frame {
                    black_box(mcp_envelope::jsonrpc::classify(&l));
                }
            })
        })
    });
    group.bench_function("frame_one_large_response", |b| {
        b.iter(|| {
            for_each_frame(&rt, &line, |frame| {
                black_box(frame);
            })
        })
    });
    // What the proxy does with a large success response instead of the full parse above: one
    // pass that validates the line and keeps only the rows the budget can use.
    let text = std::str::from_utf8(&line).unwrap().trim_end();
    let ctx = MappingContext {
        call_id: "1",
        tool: "bench",
        server: "bench",
        budget: mcp_envelope::budget::Budget::chars(2_000),
        text: mcp_envelope::outcome::TextShape {
            long_rows: mcp_envelope::budget::LongRows::Keep,
            ..Default::default()
        },
        media: MediaMode::Passthrough,
    };
    group.bench_function("map_raw_response_one_large_response_budget_2000", |b| {
        b.iter(|| black_box(map_raw_response(black_box(text), &ctx).unwrap()))
    });
    group.throughput(Throughput::Bytes(small.len() as u64));
    group.bench_function("frame_and_parse_10k_small_requests", |b| {
        b.iter(|| {
            for_each_frame(&rt, &small, |frame| {
                if let mcp_envelope::jsonrpc::Frame::Line(l) = frame {
                    black_box(mcp_envelope::jsonrpc::classify(&l));
                }
            })
        })
    });
    group.finish();
}

criterion_group!(benches, envelope_core, result_mapping, message_lines);
criterion_main!(benches);

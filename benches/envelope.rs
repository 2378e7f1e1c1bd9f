//! Criterion benchmarks of the hot paths: the envelope core (rows/s), the result mapping of a
//! large CallToolResult (MB/s of JSON input), and reading message lines (MB/s).
//!
//! Run: `cargo bench --bench envelope`. Figures are recorded in README.md / BENCHMARKS.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcp_envelope::budget::{Budget, Tokenizer};
use mcp_envelope::config::MediaMode;
use mcp_envelope::envelope::{summarize_tool_result, ToolResult};
use mcp_envelope::jsonrpc::LineReader;
use mcp_envelope::outcome::TextShape;
use mcp_envelope::outcome::{
    map_outcome, map_raw_response, map_result_from, MappingContext, Outcome,
};
use mcp_envelope::paging::{PageKey, PageStore, StoredCall, DEFAULT_MAX_BYTES, DEFAULT_TTL};
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

/// A git log like text of `commits` commits (about 200 bytes each).
fn git_log_text(commits: usize) -> String {
    (0..commits)
        .map(|i| {
            format!(
                "Commit: '{i:040x}'\nAuthor: <Test <t@example.invalid>>\nDate: 2026-01-01 00:00:00+00:00\nMessage: 'commit number {i} fixes the parser'\n\n"
            )
        })
        .collect()
}

/// Tokenizer throughput (MB/s of text counted), and what a token budget adds to mapping a
/// text result over a character budget of about the same size (about 4 characters a token).
fn token_budgets(c: &mut Criterion) {
    let text = git_log_text(5_000);
    let mut group = c.benchmark_group("tokens");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(text.len() as u64));
    for tokenizer in Tokenizer::ALL {
        tokenizer.preload();
        group.bench_function(format!("count_{tokenizer}_1MB_git_log"), |b| {
            b.iter(|| black_box(tokenizer.count(black_box(&text))))
        });
    }
    let result = json!({"content": [{"type": "text", "text": git_log_text(500)}]});
    let outcome = Outcome::Result { result };
    group.throughput(Throughput::Elements(1));
    let budgets = [
        ("chars_2000", Budget::chars(2_000)),
        (
            "o200k_500_tokens",
            Budget::tokens(500, Tokenizer::O200kBase),
        ),
        (
            "chars_and_tokens",
            Budget {
                chars: Some(2_000),
                tokens: Budget::tokens(500, Tokenizer::O200kBase).tokens,
            },
        ),
    ];
    for (label, budget) in budgets {
        let ctx = MappingContext {
            call_id: "1",
            tool: "git_log",
            server: "git",
            budget,
            media: MediaMode::Passthrough,
            text: TextShape::default(),
        };
        group.bench_function(format!("map_git_log_500_commits_{label}"), |b| {
            b.iter(|| black_box(map_outcome(black_box(&outcome), &ctx)))
        });
    }
    group.finish();
    paging_store_memory();
}

/// One row far longer than the budget (`long_rows = "split"`): a 5 MB line of text and a 5 MB
/// JSON object, cut into pieces of a 2,000-character or a 500-token budget. The whole row is
/// cut to count the pieces left out, for the first answer and again for a page from piece 1,000.
fn long_rows(c: &mut Criterion) {
    let line = "A".repeat(5_000_000);
    let results = [
        ("line", json!({"content": [{"type": "text", "text": line}]})),
        (
            "object",
            json!({"content": [], "structuredContent": {"data": line}}),
        ),
    ];
    let mut group = c.benchmark_group("long_rows");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(line.len() as u64));
    let budgets = [
        ("chars_2000", Budget::chars(2_000)),
        (
            "o200k_500_tokens",
            Budget::tokens(500, Tokenizer::O200kBase),
        ),
    ];
    for (shape, result) in &results {
        for (label, budget) in budgets {
            let ctx = MappingContext {
                call_id: "1",
                tool: "t",
                server: "s",
                budget,
                media: MediaMode::Passthrough,
                text: TextShape::default(),
            };
            for first_row in [0, 1_000] {
                let name = format!("5MB_{shape}_{label}_from_row_{first_row}");
                group.bench_function(name, |b| {
                    b.iter(|| black_box(map_result_from(black_box(result), &ctx, first_row)))
                });
            }
        }
    }
    group.finish();
}

/// Not a timing: the paging store's bytes and this process's resident memory after 1,000
/// truncated results of 100 kB each are kept in a store of the default 32 MiB (printed).
fn paging_store_memory() {
    let rss = || {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .unwrap_or(0)
    };
    let before = rss();
    let mut store = PageStore::new(DEFAULT_MAX_BYTES, DEFAULT_TTL);
    let now = std::time::Instant::now();
    let text = git_log_text(500);
    for i in 0..1_000 {
        let result = json!({"content": [{"type": "text", "text": format!("{i}{text}")}]});
        let call = StoredCall {
            result_json: result.to_string(),
            tool: "git_log".into(),
            server: "git".into(),
            server_tool: "git_log".into(),
            budget: Budget::chars(2_000),
            media: MediaMode::Passthrough,
            text: TextShape::default(),
        };
        let key = PageKey {
            session: 1,
            id: i.to_string(),
        };
        store.insert(key, call, 490, now).unwrap();
    }
    let after = rss();
    println!(
        "paging store: 1000 truncated results of {} kB kept in {} MiB: {} entries, {:.1} MiB held, process RSS {:.1} -> {:.1} MiB",
        text.len() / 1000,
        DEFAULT_MAX_BYTES >> 20,
        store.len(),
        store.used_bytes() as f64 / 1048576.0,
        before as f64 / 1024.0,
        after as f64 / 1024.0,
    );
}

criterion_group!(
    benches,
    envelope_core,
    result_mapping,
    message_lines,
    token_budgets,
    long_rows
);
criterion_main!(benches);

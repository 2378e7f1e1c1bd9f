//! Token counts equal OpenAI's reference tokenizer (Python `tiktoken`, vocabularies read from
//! the PyPI package `bpe-openai`; `tests/fixtures/token_reference.py`) on real tool outputs
//! (`tests/fixtures/token_corpus.jsonl`: git, time and everything servers' results and
//! envelopes) and on adversarial text; and a token-budgeted fill never exceeds its budget as
//! the reference counts it.

use crate::common;

use std::borrow::Cow;
use std::io::Write;
use std::process::{Command, Stdio};

use mcp_envelope::budget::{Budget, TokenLimit, Tokenizer};
use mcp_envelope::envelope::{fill_rows_within, Row};
use serde_json::Value;

/// `(o200k_base, cl100k_base)` counts of each text by the reference.
fn reference_counts(texts: &[String]) -> Vec<(usize, usize)> {
    let mut child = Command::new(common::python())
        .arg(common::root().join("tests/fixtures/token_reference.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the reference tokenizer");
    let mut input = String::new();
    for t in texts {
        input.push_str(&serde_json::to_string(t).unwrap());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "reference tokenizer failed");
    let lines: Vec<(usize, usize)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["o200k_base"].as_u64().unwrap() as usize,
                v["cl100k_base"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(lines.len(), texts.len());
    lines
}

fn corpus() -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(common::root().join("tests/fixtures/token_corpus.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["name"].as_str().unwrap().to_owned(),
                v["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn adversarial() -> Vec<(String, String)> {
    let cases = [
        ("empty", String::new()),
        ("emoji", "😀😃😄 👍🏽👩‍👩‍👧‍👦 🇵🇱🇯🇵 ❤️‍🔥".repeat(20)),
        (
            "cjk",
            "数据库查询结果：共有一千二百三十四行。日本語のテキスト、한국어 텍스트".repeat(10),
        ),
        ("spaces", format!("a{}b", " ".repeat(5000))),
        ("tabs and newlines", "\t\t\n\n \n\r\n   \n".repeat(300)),
        ("trailing spaces", format!("line{}", " ".repeat(777))),
        ("newline runs", format!("x{}y", "\n".repeat(1000))),
        ("digits", "1234567890".repeat(100)),
        ("combining", "e\u{301}a\u{308}o\u{303}".repeat(100)),
        (
            "rtl and controls",
            "שלום עולם مرحبا بالعالم \u{200f}\u{202e}abc\u{feff}".repeat(20),
        ),
        (
            "json minified",
            serde_json::to_string(&vec![
                serde_json::json!({"k": "v", "n": 1.5, "a": [1, 2, {"z": null}]});
                200
            ])
            .unwrap(),
        ),
        ("paths", "/usr/local/bin//x/../y/\n/etc/\n".repeat(50)),
        (
            "apostrophes",
            "it's they're we'll I'd you've HE'S 'quoted'".repeat(30),
        ),
        (
            "mixed case",
            "HTTPServerError camelCaseWord XMLHttpRequest".repeat(30),
        ),
        ("replacement and nul", "\u{fffd}\u{0}\u{1}\u{7f}".repeat(50)),
    ];
    cases.into_iter().map(|(n, t)| (n.to_owned(), t)).collect()
}

#[test]
fn counts_equal_the_reference_tokenizer() {
    let texts: Vec<(String, String)> = corpus().into_iter().chain(adversarial()).collect();
    assert!(texts.len() >= 25);
    let plain: Vec<String> = texts.iter().map(|(_, t)| t.clone()).collect();
    let reference = reference_counts(&plain);
    for ((name, text), (o200k, cl100k)) in texts.iter().zip(reference) {
        assert_eq!(
            Tokenizer::O200kBase.count(text),
            o200k,
            "o200k_base: {name}"
        );
        assert_eq!(
            Tokenizer::Cl100kBase.count(text),
            cl100k,
            "cl100k_base: {name}"
        );
    }
}

#[test]
fn filled_content_fits_the_token_budget_as_the_reference_counts_it() {
    let texts: Vec<(String, String)> = corpus().into_iter().chain(adversarial()).collect();
    let mut contents = Vec::new();
    let mut limits = Vec::new();
    for (_, text) in &texts {
        for (limit, tokenizer) in [
            (7, Tokenizer::O200kBase),
            (60, Tokenizer::Cl100kBase),
            (400, Tokenizer::O200kBase),
        ] {
            let rows: Vec<Row<'_>> = text
                .split('\n')
                .map(|l| Row::Line(Cow::Borrowed(l)))
                .collect();
            let budget = Budget {
                chars: None,
                tokens: Some(TokenLimit { limit, tokenizer }),
            };
            let filled = fill_rows_within(rows, &budget);
            contents.push(filled.content);
            limits.push((limit, tokenizer));
        }
    }
    let reference = reference_counts(&contents);
    for ((content, (limit, tokenizer)), (o200k, cl100k)) in
        contents.iter().zip(limits).zip(reference)
    {
        let counted = if tokenizer == Tokenizer::O200kBase {
            o200k
        } else {
            cl100k
        };
        assert!(counted <= limit, "{counted} > {limit} tokens: {content:?}");
    }
}

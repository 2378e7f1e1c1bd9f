//! The budget of `render`: whole calls oldest first, the first call shortened when it does
//! not fit, the left-out line.

use super::*;

#[test]
fn budget_exact_fit_keeps_everything() {
    let records = seed_records();
    let n = SEED_GOLDEN.chars().count();
    assert_eq!(render(&records, &budget(n)), SEED_GOLDEN);
    assert_eq!(render(&records, &budget(usize::MAX)), SEED_GOLDEN);
}

#[test]
fn budget_one_short_drops_the_last_group() {
    let records = seed_records();
    let first_group: String = SEED_GOLDEN
        .lines()
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect();
    let trailer = "(1 more call omitted for budget)\n";
    let fit = first_group.chars().count() + trailer.chars().count();
    // Exactly the first group and the line counting the other fit.
    assert_eq!(
        render(&records, &budget(fit)),
        format!("{first_group}{trailer}")
    );
    // One less: the first group is shortened so that both still fit.
    let short = render(&records, &budget(fit - 1));
    assert!(short.ends_with(trailer), "{short}");
    assert!(short.contains("characters cut]"), "{short}");
    assert!(short.chars().count() < fit, "{short}");
}

/// The budget bounds the whole output, the line counting the calls left out included (the
/// summarizer receives all of it, seed 004); only the line saying that not even the first
/// call fits shortened may pass it.
#[test]
fn every_budget_bounds_the_whole_output() {
    let records = seed_records();
    let n = SEED_GOLDEN.chars().count();
    for b in 0..=n + 1 {
        let out = render(&records, &budget(b));
        if !out.starts_with("(the first call needs") {
            assert!(out.chars().count() <= b, "budget {b}: {out}");
        }
    }
}

/// A first call too long for the budget is shortened, not left out: each line keeps its
/// number, role and label, and the rest of every line is cut to one common length.
#[test]
fn budget_first_group_not_fitting_is_shortened() {
    let long = ok(
        0,
        0,
        "1",
        "git_log",
        json!({"repo": "/r"}),
        &"commit ".repeat(100),
    );
    let records = vec![long, ok(1, 1, "2", "t", json!({}), "a")];
    // 160 for the call, 33 for the line counting the one left out.
    let out = render(&records, &budget(193));
    assert_eq!(
        out,
        "1. [assistant] function_call git_log({\"repo\":\"/r\"}) [call_id=1]\n\
         2. [tool] function_result: commit commit commit commit commit… [666 characters cut] [call_id=1]\n\
         (1 more call omitted for budget)\n"
    );
    let all = out.chars().count();
    assert!(all <= 193, "{all}");
    // One character less and the cut is shorter.
    assert!(!render(&records, &budget(all - 1)).contains("commit commit commit commit commit…"));
    // The call's arguments are cut too when they are long.
    let big_args = ok(
        0,
        0,
        "1",
        "t",
        json!({"q": "x".repeat(300)}),
        &"y".repeat(300),
    );
    let out = render(&[big_args], &budget(150));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("1. [assistant] function_call t({\"q\":\"xx"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("2. [tool] function_result: yy"),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.contains(" characters cut] [call_id=1]")),
        "{out}"
    );
}

/// When not even the labels fit, one line says what the first call needs; that much is
/// enough for the shortened call.
#[test]
fn budget_too_small_for_any_line_says_why() {
    let records = seed_records();
    let full = SEED_GOLDEN
        .lines()
        .take(2)
        .map(|l| l.chars().count() + 1)
        .sum::<usize>();
    let needs_of = |out: &str| -> usize {
        let rest = out
            .strip_prefix("(the first call needs ")
            .unwrap_or_else(|| panic!("{out}"));
        rest.split(' ').next().unwrap().parse().unwrap()
    };
    for b in [0, 10] {
        let out = render(&records, &budget(b));
        let needs = needs_of(&out);
        assert!(b < needs && needs < full, "{out}");
        assert_eq!(
            out,
            format!("(the first call needs {needs} characters even shortened, more than the budget of {b}: 2 calls omitted for budget)\n")
        );
        let shortened = render(&records, &budget(needs));
        assert!(
            shortened.starts_with("1. [assistant] function_call get_current_time("),
            "{shortened}"
        );
        assert!(
            shortened.ends_with(" [call_id=3]\n(1 more call omitted for budget)\n"),
            "{shortened}"
        );
    }
    let tokens = RenderOptions {
        budget: Some(3),
        tokens: Some(Tokenizer::O200kBase),
    };
    let out = render(&records, &tokens);
    assert!(needs_of(&out) > 3);
    assert!(
        out.contains(
            " tokens even shortened, more than the budget of 3: 2 calls omitted for budget)\n"
        ),
        "{out}"
    );
}

#[test]
fn budget_never_skips_to_a_smaller_later_group() {
    let big = ok(0, 0, "1", "t", json!({}), &"x".repeat(100));
    let small1 = ok(1, 1, "2", "t", json!({}), "a");
    let huge = ok(2, 2, "3", "t", json!({}), &"y".repeat(1000));
    let small2 = ok(3, 3, "4", "t", json!({}), "b");
    let records = vec![big, small1, huge, small2];
    let out = render(&records, &budget(310));
    assert!(out.contains("[call_id=2]"));
    assert!(!out.contains("[call_id=4]"));
    assert!(out.ends_with("(2 more calls omitted for budget)\n"));
}

#[test]
fn token_budget_counts_tokens_of_whole_groups() {
    let records = seed_records();
    let t = Tokenizer::O200kBase;
    let full = render(&records, &all());
    let n = t.count(&full);
    let opts = |n| RenderOptions {
        budget: Some(n),
        tokens: Some(t),
    };
    // The sum of the groups' tokens is the output's: exactly n keeps everything.
    assert_eq!(render(&records, &opts(n)), full);
    let short = render(&records, &opts(n - 1));
    assert!(
        short.ends_with("(1 more call omitted for budget)\n"),
        "{short}"
    );
    let kept = short.rsplit_once("(1 more").unwrap().0;
    assert!(t.count(kept) < n);
}

#[test]
fn budget_counts_characters_and_number_prefixes() {
    // 'é' is one character, two bytes.
    let r = ok(0, 0, "", "t", json!({}), "é");
    let text = render(std::slice::from_ref(&r), &all());
    let chars = text.chars().count();
    assert!(text.len() > chars);
    assert_eq!(render(std::slice::from_ref(&r), &budget(chars)), text);
    assert_eq!(
        render(&[r], &budget(chars - 1)),
        format!("(the first call needs {chars} characters even shortened, more than the budget of {}: 1 call omitted for budget)\n", chars - 1)
    );
    // Numbering continues across groups, and ten lines make the prefix wider.
    let records: Vec<CallRecord> = (0..6).map(|i| ok(i, i, "", "t", json!({}), "a")).collect();
    let out = render(&records, &all());
    assert!(out.contains("\n10. [tool] function_result: a\n11. [assistant] function_call t({})\n"));
    assert!(out.ends_with("12. [tool] function_result: a\n"));
}

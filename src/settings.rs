//! The budget settings of a tool: the pure rules live in [`envelope_core::settings`]
//! (re-exported here); these tests check them through the config parser.

pub use envelope_core::settings::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, LongRows, TextRows, TokenLimit, Tokenizer};
    use crate::config::Config;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("/cfg/x.toml"), &|_| None).map_err(|e| e.to_string())
    }

    const GIT: &str = "[mcp_servers.git]\ncommand = \"x\"\n";

    #[test]
    fn bad_budgets_name_file_line_and_key() {
        let zero = parse(&format!(
            "{GIT}[mcp_servers.git.tools.t]\ntoken_budget = 0\n"
        ));
        assert_eq!(
            zero.unwrap_err(),
            "/cfg/x.toml:4:16: mcp_servers.git.tools.t.token_budget: invalid value: integer `0`, expected a whole number of at least 1"
        );
        let negative = parse("[defaults]\ntoken_budget = -3\n").unwrap_err();
        assert!(
            negative.starts_with(
                "/cfg/x.toml:2:16: defaults.token_budget: invalid value: integer `-3`"
            ),
            "{negative}"
        );
        let zero_chars = parse(&format!("{GIT}char_budget = 0\n")).unwrap_err();
        assert!(
            zero_chars.starts_with(
                "/cfg/x.toml:3:15: mcp_servers.git.char_budget: invalid value: integer `0`"
            ),
            "{zero_chars}"
        );
        let float = parse("[defaults]\ntoken_budget = 1.5\n").unwrap_err();
        assert!(
            float.contains("defaults.token_budget: invalid type: floating point `1.5`"),
            "{float}"
        );
        let tokenizer = parse(&format!("{GIT}tokenizer = \"gpt2\"\n")).unwrap_err();
        assert_eq!(
            tokenizer,
            "/cfg/x.toml:3:13: mcp_servers.git.tokenizer: unknown variant, expected `o200k_base` or `cl100k_base`"
        );
        let rows = parse("[defaults]\nlong_rows = \"wrap\"\ntext_rows = \"lines\"\n").unwrap_err();
        assert!(
            rows.starts_with(
                "/cfg/x.toml:2:13: defaults.long_rows: unknown variant, expected `split` or `keep`"
            ),
            "{rows}"
        );
    }

    #[test]
    fn the_tighter_budget_applies_and_the_built_in_chars_only_alone() {
        let config = parse(&format!(
            "[defaults]\ntoken_budget = 500\n{GIT}tokenizer = \"cl100k_base\"\n[mcp_servers.git.tools.log]\nchar_budget = 900\ntext_rows = \"blocks\"\n"
        ))
        .unwrap();
        let log = config.tool_settings("git", "log");
        assert_eq!(log.budget().chars, Some(900));
        assert_eq!(
            log.budget().tokens,
            Some(TokenLimit {
                limit: 500,
                tokenizer: Tokenizer::Cl100kBase
            })
        );
        assert_eq!(log.text_shape().text_rows, TextRows::Blocks);
        // A token budget alone: the built-in character budget does not apply.
        let other = config.tool_settings("git", "status");
        assert_eq!(other.budget().chars, None);
        // No token budget: the built-in character budget.
        let plain = parse(GIT).unwrap().tool_settings("git", "status");
        assert_eq!(
            plain.budget(),
            Budget::chars(crate::config::DEFAULT_CHAR_BUDGET)
        );
        assert_eq!(plain.text_shape().long_rows, LongRows::Split);
    }

    #[test]
    fn recorded_budget_round_trips_and_old_records_keep_long_rows() {
        let settings = parse(&format!("{GIT}token_budget = 7\n"))
            .unwrap()
            .tool_settings("git", "t");
        let recorded = RecordedBudget::of(&settings);
        let json = serde_json::to_string(&recorded).unwrap();
        assert_eq!(
            json,
            r#"{"token_budget":7,"tokenizer":"o200k_base","chars_unlimited":true,"long_rows":"split","text_rows":"lines"}"#
        );
        let back: RecordedBudget = serde_json::from_str(&json).unwrap();
        assert_eq!(back.budget(2000), settings.budget());
        let old: RecordedBudget = serde_json::from_str("{}").unwrap();
        assert_eq!(old.long_rows, LongRows::Keep);
        assert_eq!(old.budget(10), Budget::chars(10));
    }

    #[test]
    fn levels_resolve_in_order() {
        let tool = BudgetKeys {
            token_budget: Some(10),
            ..BudgetKeys::default()
        };
        let server = BudgetKeys {
            token_budget: Some(20),
            tokenizer: Some(Tokenizer::Cl100kBase),
            ..BudgetKeys::default()
        };
        let defaults = BudgetKeys {
            text_rows: Some(TextRows::Blocks),
            ..BudgetKeys::default()
        };
        let r = BudgetRules::resolve(Some(&tool), Some(&server), &defaults);
        assert_eq!(
            r.token_budget.map(|s| (s.value, s.source)),
            Some((10, Source::Tool))
        );
        assert_eq!(r.tokenizer.value, Tokenizer::Cl100kBase);
        assert_eq!(r.tokenizer.source, Source::Server);
        assert_eq!(r.text_rows.source, Source::Defaults);
        assert_eq!(r.long_rows.value, LongRows::Split);
        assert_eq!(r.long_rows.source, Source::BuiltIn);
        assert_eq!(
            BudgetRules::resolve(None, None, &BudgetKeys::default()),
            BudgetRules::default()
        );
    }
}

//! The budget settings of a tool beside `char_budget`: `token_budget`, `tokenizer`,
//! `long_rows` and `text_rows`, as written at each level of the config ([`BudgetKeys`]) and as
//! resolved for one tool ([`BudgetRules`]), and the [`Budget`] and [`MappingContext`] a tool's
//! settings give.
//!
//! Budget rule: a tool's `content` must fit its `char_budget` and its `token_budget`, each when
//! set (the tighter one wins). The built-in `char_budget` (2000) applies only to a tool for
//! which no `token_budget` is set at any level; a `char_budget` written at any level applies
//! beside a `token_budget`.
//!
//! The resolved form ([`ToolSettings`], each value a [`Setting`] naming its [`Source`]) is what
//! the config's resolution tool table → server table → `[defaults]` → built-in produces; reading
//! and validating the config file is the main crate's job.
//!
//! This module does no I/O.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::budget::{Budget, LongRows, TextRows, TokenLimit, Tokenizer};
use crate::mapping::{MappingContext, MediaMode, TextShape};

/// Where a resolved setting came from. Display and serde form: `"tool"`, `"server"`,
/// `"defaults"`, `"built-in"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `[mcp_servers.S.tools.T]`.
    Tool,
    /// `[mcp_servers.S]`.
    Server,
    /// `[defaults]`.
    Defaults,
    /// The compiled-in `DEFAULT_*` constant.
    BuiltIn,
    /// A transcript record: the value in force when the call was recorded
    /// ([`RecordedBudget::settings`]; `serve --cassette` without `--config`).
    Recorded,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Tool => "tool",
            Source::Server => "server",
            Source::Defaults => "defaults",
            Source::BuiltIn => "built-in",
            Source::Recorded => "recorded",
        })
    }
}

/// A resolved setting and the level of the config it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting<T> {
    /// The effective value.
    pub value: T,
    /// Where `value` came from.
    pub source: Source,
}

/// The effective per-tool settings, resolved tool → server → defaults → built-in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolSettings {
    /// Envelope content budget, in characters (Unicode scalar values).
    pub char_budget: Setting<usize>,
    /// Timeout of one `tools/call`.
    pub tool_timeout: Setting<Duration>,
    /// Treatment of image/audio blocks.
    pub media: Setting<MediaMode>,
    /// `token_budget`, `tokenizer`, `long_rows`, `text_rows`.
    pub budget_rules: BudgetRules,
}

/// A budget as written in the config: a whole number of at least 1, checked while
/// deserializing so the error carries the key path and position (`0` or `-5` are errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositiveCount(pub usize);

const POSITIVE: &str = "a whole number of at least 1";

impl<'de> Deserialize<'de> for PositiveCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = PositiveCount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(POSITIVE)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<PositiveCount, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(
                        serde::de::Unexpected::Signed(v),
                        &POSITIVE,
                    )),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<PositiveCount, E> {
                match usize::try_from(v) {
                    Ok(n) if n >= 1 => Ok(PositiveCount(n)),
                    _ => Err(E::invalid_value(
                        serde::de::Unexpected::Unsigned(v),
                        &POSITIVE,
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for PositiveCount {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PositiveCount".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A whole number of at least 1.",
            "type": "integer",
            "minimum": 1
        })
    }
}

/// The budget keys of one config level (`[defaults]`, a server table or a tool table) beside
/// `char_budget`; `None` for a key not written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetKeys {
    /// `token_budget`: most tokens of envelope `content` (at least 1).
    pub token_budget: Option<usize>,
    /// `tokenizer`: whose tokens `token_budget` counts.
    pub tokenizer: Option<Tokenizer>,
    /// `long_rows`: split or keep text rows longer than the budget.
    pub long_rows: Option<LongRows>,
    /// `text_rows`: plain text as lines or blocks.
    pub text_rows: Option<TextRows>,
}

/// The budget settings of one tool beside `char_budget`, resolved tool → server → defaults →
/// built-in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetRules {
    /// `token_budget`, when set at some level (there is no built-in one).
    pub token_budget: Option<Setting<usize>>,
    /// `tokenizer`; built-in `o200k_base`.
    pub tokenizer: Setting<Tokenizer>,
    /// `long_rows`; built-in `split`.
    pub long_rows: Setting<LongRows>,
    /// `text_rows`; built-in `lines`.
    pub text_rows: Setting<TextRows>,
}

impl Default for BudgetRules {
    fn default() -> Self {
        fn built_in<T>(value: T) -> Setting<T> {
            Setting {
                value,
                source: Source::BuiltIn,
            }
        }
        BudgetRules {
            token_budget: None,
            tokenizer: built_in(Tokenizer::default()),
            long_rows: built_in(LongRows::default()),
            text_rows: built_in(TextRows::default()),
        }
    }
}

impl BudgetRules {
    /// Resolves the keys of the three levels (`None` for a level that does not apply).
    pub fn resolve(
        tool: Option<&BudgetKeys>,
        server: Option<&BudgetKeys>,
        defaults: &BudgetKeys,
    ) -> BudgetRules {
        fn pick<T: Copy>(
            get: impl Fn(&BudgetKeys) -> Option<T>,
            levels: [(Option<&BudgetKeys>, Source); 3],
        ) -> Option<Setting<T>> {
            levels.into_iter().find_map(|(keys, source)| {
                keys.and_then(&get).map(|value| Setting { value, source })
            })
        }
        let levels = [
            (tool, Source::Tool),
            (server, Source::Server),
            (Some(defaults), Source::Defaults),
        ];
        let built_in = BudgetRules::default();
        BudgetRules {
            token_budget: pick(|k| k.token_budget, levels),
            tokenizer: pick(|k| k.tokenizer, levels).unwrap_or(built_in.tokenizer),
            long_rows: pick(|k| k.long_rows, levels).unwrap_or(built_in.long_rows),
            text_rows: pick(|k| k.text_rows, levels).unwrap_or(built_in.text_rows),
        }
    }
}

impl ToolSettings {
    /// The tool's [`Budget`] (see the module documentation for the rule).
    pub fn budget(&self) -> Budget {
        let rules = &self.budget_rules;
        let tokens = rules.token_budget.map(|t| TokenLimit {
            limit: t.value,
            tokenizer: rules.tokenizer.value,
        });
        let chars = match (tokens, self.char_budget.source) {
            (Some(_), Source::BuiltIn) => None,
            _ => Some(self.char_budget.value),
        };
        Budget { chars, tokens }
    }

    /// The tool's `text_rows` and `long_rows`.
    pub fn text_shape(&self) -> TextShape {
        TextShape {
            text_rows: self.budget_rules.text_rows.value,
            long_rows: self.budget_rules.long_rows.value,
        }
    }

    /// The [`MappingContext`] of a call of this tool.
    pub fn mapping_context<'a>(
        &self,
        call_id: &'a str,
        tool: &'a str,
        server: &'a str,
    ) -> MappingContext<'a> {
        MappingContext {
            call_id,
            tool,
            server,
            budget: self.budget(),
            media: self.media.value,
            text: self.text_shape(),
        }
    }
}

/// The budget settings a transcript record keeps beside its `char_budget`, so that replay
/// recomputes the envelope as it was made. Serialized flat into the record: `token_budget` and
/// `tokenizer` only when a token budget applied, `chars_unlimited: true` only when the
/// character budget did not apply, `long_rows` and `text_rows` always. A record without
/// `long_rows` was made before rows were split, so it reads as `"keep"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct RecordedBudget {
    /// The token budget that applied, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<usize>,
    /// Its tokenizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// True when the record's `char_budget` did not apply (a token budget alone did).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chars_unlimited: bool,
    /// `long_rows` in force.
    #[serde(default = "long_rows_before_split")]
    pub long_rows: LongRows,
    /// `text_rows` in force.
    #[serde(default)]
    pub text_rows: TextRows,
}

fn long_rows_before_split() -> LongRows {
    LongRows::Keep
}

impl Default for RecordedBudget {
    fn default() -> Self {
        RecordedBudget {
            token_budget: None,
            tokenizer: None,
            chars_unlimited: false,
            long_rows: long_rows_before_split(),
            text_rows: TextRows::Lines,
        }
    }
}

impl RecordedBudget {
    /// What a call with `settings` records.
    pub fn of(settings: &ToolSettings) -> RecordedBudget {
        let budget = settings.budget();
        let shape = settings.text_shape();
        RecordedBudget {
            token_budget: budget.tokens.map(|t| t.limit),
            tokenizer: budget.tokens.map(|t| t.tokenizer),
            chars_unlimited: budget.chars.is_none(),
            long_rows: shape.long_rows,
            text_rows: shape.text_rows,
        }
    }

    /// The [`Budget`] a record with this and `char_budget` was made with.
    pub fn budget(&self, char_budget: usize) -> Budget {
        Budget {
            chars: (!self.chars_unlimited).then_some(char_budget),
            tokens: self.token_budget.map(|limit| TokenLimit {
                limit,
                tokenizer: self.tokenizer.unwrap_or_default(),
            }),
        }
    }

    /// The [`ToolSettings`] a record with this, `char_budget`, `tool_timeout` and `media` was
    /// made with, so that it maps again exactly as it did: every value's source is
    /// [`Source::Recorded`], except a character budget that did not apply (`chars_unlimited`),
    /// which is [`Source::BuiltIn`] as it was then ([`ToolSettings::budget`] leaves it out).
    pub fn settings(
        &self,
        char_budget: usize,
        tool_timeout: Duration,
        media: MediaMode,
    ) -> ToolSettings {
        fn recorded<T>(value: T) -> Setting<T> {
            Setting {
                value,
                source: Source::Recorded,
            }
        }
        let char_source = if self.chars_unlimited {
            Source::BuiltIn
        } else {
            Source::Recorded
        };
        ToolSettings {
            char_budget: Setting {
                value: char_budget,
                source: char_source,
            },
            tool_timeout: recorded(tool_timeout),
            media: recorded(media),
            budget_rules: BudgetRules {
                token_budget: self.token_budget.map(recorded),
                tokenizer: recorded(self.tokenizer.unwrap_or_default()),
                long_rows: recorded(self.long_rows),
                text_rows: recorded(self.text_rows),
            },
        }
    }

    /// The `long_rows` and `text_rows` of the record.
    pub fn text_shape(&self) -> TextShape {
        TextShape {
            text_rows: self.text_rows,
            long_rows: self.long_rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{LongRows, TextRows, Tokenizer};

    /// A record's settings, made again, give the budget and text shape it was made with: with
    /// a token budget alone (the character budget did not apply), with both, and with neither.
    #[test]
    fn recorded_settings_give_the_budget_they_were_recorded_with() {
        let keys = |token_budget| BudgetKeys {
            token_budget,
            tokenizer: Some(Tokenizer::Cl100kBase),
            long_rows: Some(LongRows::Keep),
            text_rows: Some(TextRows::Blocks),
        };
        for (token_budget, char_source) in [
            (Some(300), Source::BuiltIn),
            (Some(300), Source::Server),
            (None, Source::Tool),
        ] {
            let tool = keys(token_budget);
            let original = ToolSettings {
                char_budget: Setting {
                    value: 1500,
                    source: char_source,
                },
                tool_timeout: Setting {
                    value: Duration::from_millis(2500),
                    source: Source::Defaults,
                },
                media: Setting {
                    value: MediaMode::Describe,
                    source: Source::Server,
                },
                budget_rules: BudgetRules::resolve(Some(&tool), None, &BudgetKeys::default()),
            };
            let again = RecordedBudget::of(&original).settings(
                1500,
                Duration::from_millis(2500),
                MediaMode::Describe,
            );
            assert_eq!(again.budget(), original.budget(), "{char_source}");
            assert_eq!(again.text_shape(), original.text_shape());
            assert_eq!(again.media.value, MediaMode::Describe);
            assert_eq!(again.tool_timeout.value, Duration::from_millis(2500));
            assert_eq!(again.budget_rules.text_rows.source, Source::Recorded);
        }
    }
}

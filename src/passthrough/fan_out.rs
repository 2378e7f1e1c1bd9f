//! One request sent to several servers at once, whose answer is chosen in a fixed order, so
//! that it does not depend on which server answers first.
//!
//! A request that may go to several servers (a `resources/read` of a URI no server lists, a
//! `completion/complete` of a template no server lists) was sent to one after another: with
//! slow servers the client waited the sum of their `tool_timeout_sec`. Sent to all at once, it
//! waits at most the longest one. The rule that picks the answer is the one of the old loop:
//! the servers are taken in their order (most likely owner first, then config order), and the
//! answer of the first whose answer counts ([`Verdict::Take`]) is the request's, as soon as
//! every server before it has answered with one that does not ([`Verdict::Pass`]); later
//! servers are not waited for. The answers of the servers after it, and those still pending,
//! are handed back ([`Fanned`]) for the caller to undo what they did (a subscription).

use std::future::Future;
use std::pin::Pin;

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;

/// One server's answer: its result or JSON-RPC error object, and whether the server went down
/// while it was asked (see [`crate::passthrough::down::is_up`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The server's result, or its error (-32603 from the proxy when it did not answer).
    pub answer: Result<Value, Value>,
    /// Whether the server was down once it answered (it crashed on the request).
    pub went_down: bool,
}

/// Whether an answer decides the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It is the request's answer (unless a server before it takes it).
    Take,
    /// It is not: the next server's answer is looked at.
    Pass,
}

/// What the verdicts so far decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A server before any taken answer has not answered yet.
    Wait,
    /// The answer of the server at this index (every one before it passed).
    Take(usize),
    /// Every server answered, and every answer passed.
    NoneTaken,
}

/// Decides from the verdicts of the servers in order (`None`: no answer yet): the first
/// `Take` whose predecessors all passed.
pub fn decide(verdicts: &[Option<Verdict>]) -> Decision {
    for (i, verdict) in verdicts.iter().enumerate() {
        match verdict {
            None => return Decision::Wait,
            Some(Verdict::Take) => return Decision::Take(i),
            Some(Verdict::Pass) => {}
        }
    }
    Decision::NoneTaken
}

/// A request on its way to one server (owning what it needs: it may outlive the request that
/// sent it, see [`Fanned::pending`]).
pub type Asking = Pin<Box<dyn Future<Output = Asked> + Send>>;

/// A request on its way to the server at an index.
type Indexed = Pin<Box<dyn Future<Output = (usize, Asked)> + Send>>;

/// What [`first_taken`] found.
pub struct Fanned {
    /// The index and answer of the server whose answer is the request's; `None` when every
    /// answer passed.
    pub taken: Option<(usize, Asked)>,
    /// The other servers that answered by then (index, answer), in the order they answered.
    pub answered: Vec<(usize, Asked)>,
    /// The requests still waiting for their answer (after `taken`'s server, in order): dropped,
    /// they are given up; awaited, their answers come as (index, answer).
    pub pending: FuturesUnordered<Indexed>,
}

/// Sends every one of `asking` (one per server, in their order) at once and waits until their
/// verdicts ([`Verdict`], by `verdict(index, answer)`) decide ([`decide`]).
pub async fn first_taken(
    asking: Vec<Asking>,
    verdict: impl Fn(usize, &Asked) -> Verdict,
) -> Fanned {
    let mut verdicts: Vec<Option<Verdict>> = vec![None; asking.len()];
    let mut answers: Vec<Option<Asked>> = vec![None; asking.len()];
    let indexed = asking.into_iter().enumerate().map(|(i, asking)| {
        let indexed: Indexed = Box::pin(async move { (i, asking.await) });
        indexed
    });
    let mut pending: FuturesUnordered<Indexed> = indexed.collect();
    let mut arrival = Vec::new();
    loop {
        let taken = match decide(&verdicts) {
            Decision::Wait => None,
            Decision::Take(i) => Some(i),
            Decision::NoneTaken => break,
        };
        if let Some(i) = taken {
            let asked = answers[i].take().expect("a verdict has its answer");
            arrival.retain(|a| *a != i);
            let answered = arrival
                .into_iter()
                .filter_map(|a: usize| Some((a, answers[a].take()?)))
                .collect();
            return Fanned {
                taken: Some((i, asked)),
                answered,
                pending,
            };
        }
        let Some((i, asked)) = pending.next().await else {
            break;
        };
        verdicts[i] = Some(verdict(i, &asked));
        answers[i] = Some(asked);
        arrival.push(i);
    }
    let answered = arrival
        .into_iter()
        .filter_map(|a| Some((a, answers[a].take()?)))
        .collect();
    Fanned {
        taken: None,
        answered,
        pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn the_first_taken_answer_in_order_decides_once_those_before_it_passed() {
        use Verdict::{Pass, Take};
        assert_eq!(decide(&[]), Decision::NoneTaken);
        assert_eq!(decide(&[Some(Pass), Some(Pass)]), Decision::NoneTaken);
        assert_eq!(decide(&[Some(Pass), Some(Take), None]), Decision::Take(1));
        assert_eq!(decide(&[None, Some(Take)]), Decision::Wait, "0 may take it");
        assert_eq!(decide(&[Some(Take), None]), Decision::Take(0));
    }

    /// An answer after `ms` milliseconds.
    fn after(ms: u64, answer: Result<Value, Value>) -> Asking {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Asked {
                answer,
                went_down: false,
            }
        })
    }

    #[tokio::test]
    async fn answers_are_chosen_in_order_whoever_answers_first() {
        let take_ok = |_: usize, a: &Asked| {
            if a.answer.is_ok() {
                Verdict::Take
            } else {
                Verdict::Pass
            }
        };
        let started = tokio::time::Instant::now();
        // 1 answers first, but 0 (slower) takes it; 2 is still pending.
        let asking = vec![
            after(300, Ok(json!("zero"))),
            after(100, Ok(json!("one"))),
            after(60_000, Ok(json!("two"))),
        ];
        let fanned = first_taken(asking, take_ok).await;
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(
            took < Duration::from_secs(30),
            "2 is not waited for: {took:?}"
        );
        let (i, asked) = fanned.taken.unwrap();
        assert_eq!((i, asked.answer), (0, Ok(json!("zero"))));
        assert_eq!(fanned.answered.len(), 1);
        assert_eq!(fanned.answered[0].0, 1);
        assert_eq!(fanned.pending.len(), 1);
        // Every one passes: all answered, in the order they came.
        let asking = vec![after(200, Err(json!(0))), after(100, Err(json!(1)))];
        let fanned = first_taken(asking, take_ok).await;
        assert!(fanned.taken.is_none());
        let order: Vec<usize> = fanned.answered.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [1, 0]);
        assert!(fanned.pending.is_empty());
    }
}

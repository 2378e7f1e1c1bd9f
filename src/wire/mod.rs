//! The wire format: JSON-RPC 2.0 messages ([`jsonrpc`]), line framing ([`codec`]), reading a
//! response's head without parsing its body ([`head`]), what can be read of a line that is not
//! JSON ([`recover`]), lone surrogate escapes replaced ([`surrogates`]), a message's top-level members read without a map ([`members`]), and `tools/call` arguments kept as written ([`exact_args`]). Pure except
//! for the codec's reader and writer, which work on any `AsyncRead` / `AsyncWrite`.

pub mod codec;
pub mod exact_args;
pub mod head;
pub mod jsonrpc;
mod members;
pub mod recover;
pub mod surrogates;

//! Integration tests of particles-answer: one module per topic.

/// The whole answer step against the reference's `_build_response`.
mod answer_reference;
/// The Anthropic protocol against the scripted server.
mod anthropic;
/// Particles and settings the protocol tests share.
mod fixture;
/// The grounding parser against the reference's `parse_grounded`.
mod grounding_reference;
/// The OpenAI-compatible protocol against the scripted server.
mod openai;
/// The scripted loopback HTTP server.
mod server;
/// Helpers: the reference's Python and its scripts.
mod support;

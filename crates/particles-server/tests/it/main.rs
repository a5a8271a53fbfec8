//! Integration tests of the HTTP engine and its front ends: one module per topic.
//!
//! - `security`: the reference's gates and limits against an in-process server
//!   on a fixture store (no reference needed).
//! - `reads`: the particle reads (`/particles/contested`, `/particles/{id}`,
//!   `/particles/{id}/source`) on the fixture.
//! - `reference_cli`: the reference's own CLI and MCP tool against our server,
//!   compared with the same CLI in-process, on stores the reference wrote.
//! - `fuzz`: seeded adversarial requests over raw TCP: never a 5xx (bar the
//!   documented ones), a panic or a hang.
//! - `proxy`: writes through our server to the reference's engine upstream.
//! - `clients`: the compatibility matrix: every tool of the reference's MCP
//!   server and its CLI's remote verbs, through our server and straight to the
//!   reference's engine, the same both ways.

mod clients;
mod digest;
mod fuzz;
mod proxy;
mod reads;
mod reference_cli;
mod security;
mod stand_in;
mod support;

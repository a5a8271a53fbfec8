//! The security cases as a fuzzed suite: seeded random and adversarial
//! requests over raw TCP (methods, targets, versions, headers, framings,
//! bodies, slow and dropped connections) against two in-process servers, one
//! with a bearer key and a small body cap, one in dev mode with the defaults.
//!
//! Every request must get a valid HTTP response whose status is not 5xx (bar
//! the documented exceptions in [`allowed_5xx`]), or, where the request never
//! completes, a close; each within a deadline (no hang); no server thread may
//! panic; and both servers must answer a valid `/health` and `/query` after.
//!
//! `PARTICLES_HTTP_FUZZ_CASES` (default 300) sets the count,
//! `PARTICLES_HTTP_FUZZ_SEED` the seed (fixed by default, so a run repeats).
//! The figures by status are printed (`--nocapture`) for docs/reliability.md.

use std::{
    collections::BTreeMap,
    io::{ErrorKind, Read, Write},
    net::{Shutdown, SocketAddr, TcpStream},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use particles_server::Limits;

use crate::support::{fixture_store, post_query, request, ServerSetup, TestServer};

const KEY: &str = "fuzz-key";
const PARTICLE: &str = "11111111-1111-4111-8111-111111111111";
/// How long one case may take, from connect to the last byte read. The
/// servers' own timeouts are 1 s, so a case near this is a hang.
const CASE_DEADLINE: Duration = Duration::from_secs(20);

/// xorshift64*: small, seeded, and the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// How the request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    Exact,
    /// `Content-Length` below the body: the rest reads as a next request.
    Short,
    /// `Content-Length` above the body: the server waits (body timeout).
    Long,
    /// No length at all.
    None,
    Chunked,
    /// A chunk size that is not hex, or no final chunk.
    BadChunked,
    /// `Content-Length` and `Transfer-Encoding: chunked` together.
    Both,
    /// Two different `Content-Length`s.
    Duplicate,
    /// A length that is not a number, negative or past u64.
    Garbage,
}

/// How the client behaves on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// Sends everything, reads the answer.
    Complete,
    /// Sends everything in pieces with pauses, reads the answer.
    Slow,
    /// Sends a prefix and closes: nothing to check but the server after.
    Drop,
    /// Sends a prefix and waits: the server must close or answer in time.
    Stall,
}

struct Case {
    method: Vec<u8>,
    target: Vec<u8>,
    version: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    framing: Framing,
    ending: Ending,
    /// Which server: 0 with a key and a 4 KiB cap, 1 in dev mode.
    server: usize,
}

impl Case {
    fn wire(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.method);
        out.push(b' ');
        out.extend_from_slice(&self.target);
        if !self.version.is_empty() {
            out.push(b' ');
            out.extend_from_slice(&self.version);
        }
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        let len = self.body.len();
        let mut framing_line = |line: String| {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        match self.framing {
            Framing::Exact => framing_line(format!("Content-Length: {len}")),
            Framing::Short => framing_line(format!("Content-Length: {}", len / 2)),
            Framing::Long => framing_line(format!("Content-Length: {}", len + 50)),
            Framing::None => {}
            Framing::Chunked | Framing::BadChunked => {
                framing_line("Transfer-Encoding: chunked".into())
            }
            Framing::Both => {
                framing_line(format!("Content-Length: {len}"));
                framing_line("Transfer-Encoding: chunked".into());
            }
            Framing::Duplicate => {
                framing_line(format!("Content-Length: {len}"));
                framing_line(format!("Content-Length: {}", len + 1));
            }
            Framing::Garbage => framing_line(
                ["-1", "abc", "99999999999999999999999", "1 2", "0x10", ""][len % 6].into(),
            ),
        }
        out.extend_from_slice(b"\r\n");
        match self.framing {
            Framing::Chunked | Framing::Both => {
                for piece in self.body.chunks(7) {
                    out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
            Framing::BadChunked => {
                out.extend_from_slice(b"zz\r\n");
                out.extend_from_slice(&self.body);
                out.extend_from_slice(b"\r\n");
            }
            _ => out.extend_from_slice(&self.body),
        }
        out
    }
}

const METHODS: &[&str] = &[
    "GET", "GET", "POST", "POST", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE",
    "CONNECT", "get", "post", "Post", "FROB", "M-SEARCH", "GE T", "", "P\x7fST",
];

const PATHS: &[&str] = &[
    "/query",
    "/query",
    "/query",
    "/health",
    "/particles/contested",
    "/particles/11111111-1111-4111-8111-111111111111",
    "/particles/11111111-1111-4111-8111-111111111111/source",
    "/particles/22222222-2222-4222-8222-222222222222/source",
    "/particles/..",
    "/particles/%2e%2e/source",
    "/particles/..%2F..%2Fetc%2Fpasswd",
    "/../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/particles/%00",
    "/particles/%FF%FE%C0%AF",
    "/particles/%C3%A9t%C3%A9",
    "/particles/\u{e9}t\u{e9}",
    "/particles/\u{1F600}/source",
    "/particles/%",
    "/particles/%zz",
    "/particles//source",
    "/particles/",
    "//health",
    "/health/",
    "/HEALTH",
    "/query/",
    "/corpus",
    "/app",
    "*",
    "http://evil.example/query",
    "http://127.0.0.1/health",
    "query",
    "",
];

const QUERY_STRINGS: &[&str] = &[
    "?top_k=5",
    "?a=1&a=2&&=",
    "?%zz=%",
    "?q=\u{e9}",
    "?",
    "#fragment",
    "?x=%00",
];

const VERSIONS: &[&str] = &[
    "HTTP/1.1",
    "HTTP/1.1",
    "HTTP/1.1",
    "HTTP/1.1",
    "HTTP/1.1",
    "HTTP/1.1",
    "HTTP/1.0",
    "HTTP/2.0",
    "HTTP/1.2",
    "HTTP/9.9",
    "http/1.1",
    "HTTP/1.1 extra",
    "",
];

/// QueryRequest's fields, each to get a wrong type.
const FIELDS: &[&str] = &[
    "question",
    "min_confidence",
    "uncertainty_nature",
    "assertion_modality",
    "recency_window_days",
    "audience",
    "top_k",
    "subject_id",
    "tags",
    "include_ancestors",
    "include_document_meta",
    "include_non_asserted",
    "include_agreement",
    "include_contestedness",
    "as_of",
    "window",
    "observer_project",
    "grounded",
    "predicate",
    "object_eq",
    "object_gt",
    "object_lt",
    "object_contains",
    "count",
    "group_by",
    "min_effective_confidence",
    "list_predicates",
    "list_vocabulary",
    "no_such_field",
];

const VALUES: &[&str] = &[
    "\"silver coins\"",
    "\"\"",
    "0",
    "-1",
    "3",
    "0.5",
    "-0.0",
    "1e400",
    "-1e400",
    "123456789012345678901234567890",
    "NaN",
    "Infinity",
    "true",
    "false",
    "null",
    "[]",
    "[1, \"a\", null]",
    "{}",
    "{\"start\": \"2024-01-01\", \"end\": \"not a date\"}",
    "{\"start\": \"2024-01-01T00:00:00\", \"end\": \"2023-01-01T00:00:00\"}",
    "\"2024-02-30T25:61:00\"",
    "\"2024-01-01T00:00:00+99:00\"",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "\"predicate\"",
    "\"EPISTEMIC\"",
    "\"public\"",
];

/// A request body: valid queries, every field with wrong types, broken JSON,
/// deep nesting, other encodings and plain noise.
fn body(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => br#"{"question": "silver coins", "top_k": 3}"#.to_vec(),
        1..=3 => {
            // One to four fields, each with any value.
            let n = 1 + rng.below(4);
            let fields: Vec<String> = (0..n)
                .map(|_| format!("\"{}\": {}", rng.pick(FIELDS), rng.pick(VALUES)))
                .collect();
            format!("{{{}}}", fields.join(", ")).into_bytes()
        }
        4 => {
            // A valid document cut anywhere.
            let whole = br#"{"question": "gold", "top_k": 2, "tags": ["a", "b"], "window": {"start": "2024-01-01"}}"#;
            whole[..rng.below(whole.len())].to_vec()
        }
        5 => {
            // Deep nesting: past serde_json's recursion limit and Python's.
            let depth = [10, 200, 5_000, 100_000][rng.below(4)];
            let (open, close) = if rng.chance(50) {
                ("[", "]")
            } else {
                ("{\"a\":", "}")
            };
            let mut text = String::from("{\"question\": ");
            text.push_str(&open.repeat(depth));
            text.push('1');
            text.push_str(&close.repeat(depth));
            text.push('}');
            text.into_bytes()
        }
        6 => {
            // Invalid UTF-8 inside and around the JSON.
            let mut bytes = br#"{"question": ""#.to_vec();
            bytes.extend_from_slice(&[0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]);
            bytes.extend_from_slice(b"\"}");
            bytes
        }
        7 => {
            // UTF-16 and UTF-32, with and without a BOM, some odd-length.
            let text = r#"{"question": "coins"}"#;
            let mut units: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
            match rng.below(4) {
                0 => units.splice(0..0, [0xff, 0xfe]).for_each(drop),
                1 => units.push(0),
                2 => {
                    units = text
                        .chars()
                        .flat_map(|c| u32::from(c).to_be_bytes())
                        .collect()
                }
                _ => {}
            }
            units
        }
        8 => {
            // A large string: past server 0's cap of 4 KiB, under the default.
            let n = [100, 5_000, 70_000][rng.below(3)];
            format!("{{\"question\": \"{}\"}}", "x".repeat(n)).into_bytes()
        }
        9 => {
            let n = rng.below(300);
            rng.bytes(n)
        }
        10 => Vec::new(),
        _ => rng
            .pick(&[
                "[1]",
                "\"str\"",
                "null",
                "1",
                "{\"question\": \"a\",}",
                "{'a': 1}",
            ])
            .as_bytes()
            .to_vec(),
    }
}

fn target(rng: &mut Rng) -> Vec<u8> {
    let mut target = rng.pick(PATHS).as_bytes().to_vec();
    if rng.chance(15) {
        target.extend_from_slice(rng.pick(QUERY_STRINGS).as_bytes());
    }
    match rng.below(36) {
        // Overlong: past hyper's URI limit, or just long.
        0 => target.extend(std::iter::repeat_n(
            b'a',
            [300, 9_000, 70_000][rng.below(3)],
        )),
        // A raw control byte or NUL somewhere.
        1 => {
            let at = rng.below(target.len() + 1);
            target.insert(at, [0u8, b'\t', 0x7f, b' ', b'\n'][rng.below(5)]);
        }
        2 => target.extend_from_slice(&rng.bytes(8)),
        _ => {}
    }
    target
}

fn headers(rng: &mut Rng, addr: SocketAddr, server: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, value: Vec<u8>| out.push((name.as_bytes().to_vec(), value));
    let host = addr.to_string().into_bytes();
    match rng.below(24) {
        0 => {}
        1 => {
            add("Host", host.clone());
            add("Host", b"evil.example".to_vec());
        }
        2 => add("Host", b"evil.example:8931".to_vec()),
        3 => add("Host", Vec::new()),
        4 => add("Host", "h".repeat(10_000).into_bytes()),
        5 => add("Host", b"[::1".to_vec()),
        6 => add("Host", "\u{e9}xample".as_bytes().to_vec()),
        _ => add("Host", host),
    }
    if rng.chance(85) {
        let content_type: &str = rng.pick(&[
            "application/json",
            "application/json",
            "application/json; charset=utf-8",
            "application/vnd.api+json",
            "text/plain",
            "application/x-www-form-urlencoded",
            "APPLICATION/JSON",
            "application/json/extra",
            "",
        ]);
        add("Content-Type", content_type.as_bytes().to_vec());
    }
    let bearer = format!("Bearer {KEY}");
    match rng.below(10) {
        0..=3 if server == 0 => add("Authorization", bearer.into_bytes()),
        4 => add("Authorization", format!("bearer   {KEY}  ").into_bytes()),
        5 => add("Authorization", b"Bearer".to_vec()),
        6 => add("Authorization", format!("Basic {KEY}").into_bytes()),
        7 => add(
            "Authorization",
            [b"Bearer ".to_vec(), rng.bytes(20)].concat(),
        ),
        8 => {
            add("Authorization", b"Bearer wrong".to_vec());
            add("Authorization", format!("Bearer {KEY}").into_bytes());
        }
        _ => {}
    }
    match rng.below(30) {
        0 => add("Origin", b"https://evil.example".to_vec()),
        1 => add("Origin", b"http://[::1".to_vec()),
        2 => add("Sec-Fetch-Site", b"cross-site".to_vec()),
        3 => add("X-Forwarded-For", b"203.0.113.7, ::1, garbage".to_vec()),
        4 => add("Expect", b"100-continue".to_vec()),
        5 => add("Bad Header", b"x".to_vec()),
        6 => add("X-Big", "v".repeat(70_000).into_bytes()),
        7 => {
            for i in 0..150 {
                add(&format!("X-Many-{i}"), b"1".to_vec());
            }
        }
        8 => add("X-Bytes", rng.bytes(16)),
        9 => add("Transfer-Encoding", b"gzip".to_vec()),
        _ => {}
    }
    if rng.chance(90) {
        add("Connection", b"close".to_vec());
    }
    out
}

fn case(rng: &mut Rng, addrs: [SocketAddr; 2]) -> Case {
    let server = rng.below(2);
    // Each dimension is mostly well-formed, so that most requests reach the
    // application's gates rather than all stopping at hyper's parser.
    let method = if rng.chance(3) {
        "X".repeat(300).into_bytes()
    } else if rng.chance(70) {
        rng.pick(&["GET", "POST", "POST", "POST"])
            .as_bytes()
            .to_vec()
    } else {
        rng.pick(METHODS).as_bytes().to_vec()
    };
    // Most POSTs go to /query, so bodies reach its decoder and validation.
    let target = if method == b"POST" && rng.chance(60) {
        b"/query".to_vec()
    } else {
        target(rng)
    };
    let version = if rng.chance(85) {
        b"HTTP/1.1".to_vec()
    } else {
        rng.pick(VERSIONS).as_bytes().to_vec()
    };
    let headers = headers(rng, addrs[server], server);
    let body = if method.eq_ignore_ascii_case(b"POST") || rng.chance(20) {
        body(rng)
    } else {
        Vec::new()
    };
    let framing = match rng.below(40) {
        0..=29 => Framing::Exact,
        30 => Framing::Short,
        31 => Framing::Long,
        32 => Framing::None,
        33 | 34 => Framing::Chunked,
        35 => Framing::BadChunked,
        36 => Framing::Both,
        37 => Framing::Duplicate,
        _ => Framing::Garbage,
    };
    let ending = match rng.below(40) {
        0..=33 => Ending::Complete,
        34 | 35 => Ending::Slow,
        36 | 37 => Ending::Drop,
        _ => Ending::Stall,
    };
    Case {
        method,
        target,
        version,
        headers,
        body,
        framing,
        ending,
        server,
    }
}

/// What came back for one case.
#[derive(Debug)]
enum Answer {
    /// A final response: its status and body.
    Response(u16, Vec<u8>),
    /// The server closed (or reset) the connection without a response.
    Closed,
    /// We closed it (a dropped request).
    DroppedByUs,
}

/// Reads one final response (skipping 1xx), or a close; panics past the
/// deadline, which is a hang.
fn read_answer(stream: &mut TcpStream, head_only: bool, started: Instant, what: &str) -> Answer {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let status_line = head.lines().next().unwrap_or_default();
            assert!(
                status_line.starts_with("HTTP/1.1 ") || status_line.starts_with("HTTP/1.0 "),
                "{what}: not an HTTP status line: {status_line:?}"
            );
            let status: u16 = status_line
                .get(9..12)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{what}: no status in {status_line:?}"));
            if (100..200).contains(&status) {
                buffer.drain(..end + 4);
                continue;
            }
            let length = head.lines().skip(1).find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            let chunked = head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked");
            let body_start = end + 4;
            // A HEAD answer carries a length but no body: on a kept-alive
            // connection, waiting for it would be a hang of our own.
            if !head_only {
                loop {
                    let have = buffer.len() - body_start;
                    let done = match length {
                        Some(n) => have >= n,
                        None if chunked => buffer[body_start..].ends_with(b"0\r\n\r\n"),
                        None => false,
                    };
                    if done {
                        break;
                    }
                    match read_some(stream, &mut chunk, started, what) {
                        Some(0) | None => break,
                        Some(n) => buffer.extend_from_slice(&chunk[..n]),
                    }
                }
            }
            return Answer::Response(status, buffer[body_start..].to_vec());
        }
        match read_some(stream, &mut chunk, started, what) {
            Some(0) | None => {
                assert!(
                    buffer.is_empty(),
                    "{what}: a partial response: {:?}",
                    String::from_utf8_lossy(&buffer)
                );
                return Answer::Closed;
            }
            Some(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// One read: `Some(0)` at the end, `None` on a reset; panics past the case's
/// deadline.
fn read_some(
    stream: &mut TcpStream,
    chunk: &mut [u8],
    started: Instant,
    what: &str,
) -> Option<usize> {
    loop {
        assert!(
            started.elapsed() < CASE_DEADLINE,
            "{what}: no answer and no close within {CASE_DEADLINE:?} (a hang)"
        );
        match stream.read(chunk) {
            Ok(n) => return Some(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

fn run_case(case: &Case, addr: SocketAddr, rng: &mut Rng) -> Answer {
    let started = Instant::now();
    let wire = case.wire();
    let what = format!(
        "{:?} {:?} {:?} on server {} ({:?}, {:?}, {} header(s), {} body bytes)",
        String::from_utf8_lossy(&case.method)
            .chars()
            .take(40)
            .collect::<String>(),
        String::from_utf8_lossy(&case.target)
            .chars()
            .take(80)
            .collect::<String>(),
        String::from_utf8_lossy(&case.version),
        case.server,
        case.framing,
        case.ending,
        case.headers.len(),
        case.body.len(),
    );
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a read timeout");
    stream
        .set_write_timeout(Some(CASE_DEADLINE))
        .expect("a write timeout");
    // A write can fail when the server has already answered and closed (a
    // refused head, a body over the cap): the answer is still read.
    match case.ending {
        Ending::Complete => {
            let _ = stream.write_all(&wire);
        }
        Ending::Slow => {
            let pieces = 2 + rng.below(4);
            let size = wire.len().div_ceil(pieces).max(1);
            for piece in wire.chunks(size) {
                if stream.write_all(piece).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(40));
            }
        }
        Ending::Drop => {
            let cut = rng.below(wire.len().max(1));
            let _ = stream.write_all(&wire[..cut]);
            let _ = stream.shutdown(Shutdown::Both);
            return Answer::DroppedByUs;
        }
        Ending::Stall => {
            let cut = rng.below(wire.len().max(1));
            let _ = stream.write_all(&wire[..cut]);
        }
    }
    read_answer(&mut stream, case.method == b"HEAD", started, &what)
}

/// Whether a request that was sent whole may still see no response: hyper
/// closes without answering when the head never ends (a request line or
/// headers cut short by the framing of a garbage first line), and a reset can
/// swallow the answer to a request whose body we were still writing.
fn may_close(case: &Case) -> bool {
    case.ending == Ending::Stall
        || case.version.is_empty()
        || case.method.is_empty()
        || case.body.len() > 4_000
        || case.target.contains(&b'\n')
}

/// The 5xx answers that are documented, each with why:
///
/// - 501 naming `--upstream`: a path or method we do not serve, with no
///   upstream to forward it to (crate docs, `forward`), or a query mode the
///   engine does not run yet; the reference serves these, we say where.
/// - 503 naming the in-flight limit: our cap on queries at once (cannot occur
///   here, requests go one at a time, but it is the cap's documented answer).
/// - 505: hyper's answer to an HTTP version other than 1.0/1.1, before any
///   code of ours runs; only for such a version.
///
/// No 500: where the reference raises on bad input (a `/query` body without a
/// JSON content type that is not UTF-8, an `Origin` with a malformed bracketed
/// host) we answer the 422 and the 403 those requests mean (docs/reliability.md).
fn allowed_5xx(case: &Case, status: u16, body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let head_empty = case.method == b"HEAD" && body.is_empty();
    let version_ok = matches!(case.version.as_slice(), b"HTTP/1.1" | b"HTTP/1.0");
    match status {
        // A HEAD answer has the status without the text.
        501 => text.contains("--upstream") || head_empty,
        503 => text.contains("in-flight limit"),
        505 => !version_ok,
        _ => false,
    }
}

/// Panics on any thread that is not a test's own (the servers' runtimes,
/// their blocking pools, their starting threads), counted by a hook that
/// then hands over to the default one.
static SERVER_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_server_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("");
        if name.is_empty() || name.starts_with("tokio") {
            SERVER_PANICS.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
}

fn still_serving(server: &TestServer, bearer: &[(&str, &str)]) {
    let health = request(server.addr, "GET", "/health", &[], None);
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.json()["status"], "ok");
    let query = post_query(
        server.addr,
        bearer,
        r#"{"question": "silver coins", "top_k": 3}"#,
    );
    assert_eq!(
        query.status,
        200,
        "{}",
        String::from_utf8_lossy(&query.body)
    );
    let json = query.json();
    assert!(
        json.get("results")
            .or_else(|| json.get("particles"))
            .is_some_and(|r| r.as_array().is_some_and(|a| !a.is_empty())),
        "a valid query answers particles: {json}"
    );
    let particle = request(
        server.addr,
        "GET",
        &format!("/particles/{PARTICLE}"),
        bearer,
        None,
    );
    assert_eq!(particle.status, 200);
}

#[test]
fn adversarial_requests_get_4xx_never_5xx_a_panic_or_a_hang() {
    count_server_panics();
    let cases: usize = std::env::var("PARTICLES_HTTP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seed: u64 = std::env::var("PARTICLES_HTTP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_F022);
    let limits = || Limits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let dir_keyed = tempfile::tempdir().unwrap();
    let store_keyed = fixture_store(dir_keyed.path());
    let mut setup = ServerSetup::new(&store_keyed);
    setup.key = Some(KEY);
    setup.config_yaml =
        "network: {egress: none}\napi: {max_request_body_bytes: 4096, rate_limit_per_minute: 0}\n";
    setup.limits = limits();
    let keyed = TestServer::start(setup);
    let dir_dev = tempfile::tempdir().unwrap();
    let store_dev = fixture_store(dir_dev.path());
    let mut setup = ServerSetup::new(&store_dev);
    setup.config_yaml = "network: {egress: none}\napi: {rate_limit_per_minute: 0}\n";
    setup.limits = limits();
    let dev = TestServer::start(setup);
    let addrs = [keyed.addr, dev.addr];

    let mut rng = Rng(seed | 1);
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    let mut allowed_5xx_seen: BTreeMap<u16, usize> = BTreeMap::new();
    let (mut closed, mut dropped) = (0usize, 0usize);
    let mut slowest = Duration::ZERO;
    let run = Instant::now();
    for index in 0..cases {
        let case = case(&mut rng, addrs);
        let started = Instant::now();
        let answer = run_case(&case, addrs[case.server], &mut rng);
        slowest = slowest.max(started.elapsed());
        let what = format!(
            "case {index} (seed {seed}): {:?}",
            String::from_utf8_lossy(&case.wire()[..case.wire().len().min(300)])
        );
        match answer {
            Answer::Response(status, body) => {
                *by_status.entry(status).or_default() += 1;
                assert!((200..600).contains(&status), "{what}: status {status}");
                if status >= 500 {
                    assert!(
                        allowed_5xx(&case, status, &body),
                        "{what}: answered {status}: {}",
                        String::from_utf8_lossy(&body)
                    );
                    *allowed_5xx_seen.entry(status).or_default() += 1;
                }
            }
            Answer::Closed => {
                assert!(may_close(&case), "{what}: closed without a response");
                closed += 1;
            }
            Answer::DroppedByUs => dropped += 1,
        }
    }
    let class = |low: u16| -> usize { by_status.range(low..low + 100).map(|(_, n)| n).sum() };
    eprintln!(
        "http fuzz: {cases} cases (seed {seed}) in {:.1} s, slowest {:.2} s: \
         2xx {}, 3xx {}, 4xx {}, 5xx {} (all documented: {allowed_5xx_seen:?}), \
         closed by the server {closed}, dropped by us {dropped}; by status {by_status:?}",
        run.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
        class(200),
        class(300),
        class(400),
        class(500),
    );
    let bearer = format!("Bearer {KEY}");
    still_serving(&keyed, &[("Authorization", bearer.as_str())]);
    still_serving(&dev, &[]);
    assert_eq!(
        SERVER_PANICS.load(Ordering::SeqCst),
        0,
        "a server thread panicked (see the output above)"
    );
    assert!(
        class(400) > cases / 4,
        "the fuzz reaches the gates: {by_status:?}"
    );
}

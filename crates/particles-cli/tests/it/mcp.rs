//! `particles-rs mcp` and `serve --http` as processes: the MCP SDK's stdio
//! client (the `mcp` Python package) lists our tools and calls `query`, before
//! and after another process's commit; the
//! HTTP engine starts, answers `/health` and stops on SIGTERM.

use std::process::Command;

use serde_json::Value;

use crate::support::{particles_rs_command, workspace_root};

const CLIENT: &str = r#"
import asyncio, json, os, sqlite3, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    binary, store = sys.argv[1], sys.argv[2]
    params = StdioServerParameters(command=binary, args=["mcp", "--store", store, "--no-sidecar"],
                                   env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            full = await session.call_tool("query", {"question": "coins", "top_k": 3})
            # Another process's commit, the first hit retired: the next
            # question must not see it, whether the server's follower has
            # brought its cache to the head by then (0.3 s) or not.
            first = full.structuredContent["particles"][0]["id"]
            with sqlite3.connect(store) as writer:
                writer.execute("UPDATE particles SET status = 'SUPERSEDED' WHERE id = ?", (first,))
            await asyncio.sleep(0.3)
            after = await session.call_tool("query", {"question": "coins", "top_k": 3})
            slim = await session.call_tool("query", {"question": "coins", "top_k": 2, "summary": True})
            bad = await session.call_tool("query", {"question": "coins", "audience": "nobody"})
            print(json.dumps({
                "retired": first,
                "after": [p["id"] for p in after.structuredContent["particles"]],
                "server": init.serverInfo.name,
                "tools": [t.name for t in tools.tools],
                "params": sorted(tools.tools[0].inputSchema["properties"]),
                "full": full.structuredContent, "full_error": full.isError,
                "slim": json.loads(slim.content[0].text),
                "bad": bad.content[0].text, "bad_error": bad.isError,
            }))

asyncio.run(main())
"#;

/// The reference's Python with the `mcp` package and the PYTHONPATH it was
/// checked with, or `None` after saying why.
fn python_with(needs: &str) -> Option<(std::path::PathBuf, String)> {
    let pythonpath = std::env::var("PARTICLES_REFERENCE_EXTRA_PATH").unwrap_or_default();
    let python = particles_testkit::reference_python_with(&[needs], &pythonpath)?;
    Some((python, pythonpath))
}

#[test]
fn an_mcp_client_lists_our_tool_and_queries() {
    let Some((python, pythonpath)) = python_with("mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(&python)
        .arg(workspace_root().join("tests/reference/make_cases.py"))
        .args(["--seed", "21", "--requests", "1", "--out"])
        .arg(dir.path())
        .output()
        .expect("make_cases.py runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let store = dir.path().join("store-21.db");
    let config = dir.path().join("test.yaml");
    std::fs::write(&config, "network: {egress: none}\n").unwrap();
    // The client starts the server with its own environment: the test's
    // isolation (HOME, model and sidecar directories) travels with it.
    let template = particles_rs_command();
    let mut command = Command::new(&python);
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .args(["-c", CLIENT, env!("CARGO_BIN_EXE_particles-rs")])
        .arg(&store)
        .env("PARTICLES_CONFIG", &config)
        .env("PYTHONPATH", &pythonpath)
        .output()
        .expect("the MCP client runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(result["server"], "particles");
    assert_eq!(result["tools"], serde_json::json!(["query"]));
    for param in [
        "question",
        "tags",
        "subject_id",
        "top_k",
        "summary",
        "as_of",
        "on",
        "group_by",
        "all_projects",
        "grounded",
    ] {
        assert!(
            result["params"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p == param),
            "{param}"
        );
    }
    assert_eq!(result["full_error"], false);
    let full = &result["full"];
    assert!(full["answer"].is_string());
    let particles = full["particles"].as_array().expect("particles");
    assert!(!particles.is_empty() && particles.len() <= 3);
    assert!(particles
        .iter()
        .all(|p| p.get("contested").is_some() && p.get("provenance").is_some()));
    let slim = result["slim"]["particles"]
        .as_array()
        .expect("slim particles");
    let keys: Vec<&str> = slim[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        keys.starts_with(&[
            "id",
            "content",
            "confidence",
            "effective_confidence",
            "subject_ids",
            "contested"
        ]),
        "{keys:?}"
    );
    let after = result["after"]
        .as_array()
        .expect("the answer after the write");
    assert!(!after.is_empty(), "{result}");
    assert!(
        after.iter().all(|id| *id != result["retired"]),
        "the retired belief is still answered: {result}"
    );
    assert_eq!(result["bad_error"], true);
    assert_eq!(
        result["bad"],
        "Error executing tool query: 'nobody' is not a valid AudienceHint"
    );
}

#[test]
fn serve_http_starts_answers_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    // A store with the reference's schema and no beliefs.
    let store = dir.path().join("empty.db");
    drop(particles_store::create_store(&store).expect("a new store"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = particles_rs_command()
        .args([
            "serve",
            "--http",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--no-sidecar",
            "--store",
        ])
        .arg(&store)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the engine starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let body = loop {
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            stream
                .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut text = String::new();
            let _ = stream.read_to_string(&mut text);
            break text;
        }
        // An engine that exited will never listen: show why instead of waiting.
        if child.try_wait().expect("the child's status").is_some() {
            let output = child.wait_with_output().expect("the engine's stderr");
            panic!(
                "the engine exited before listening: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the engine did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains(r#""version":"particles-rs "#), "{body}");
    // SIGTERM through kill(1): the crate forbids unsafe code, even in tests.
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill(1) runs");
    assert!(sent.success());
    let output = child.wait_with_output().expect("the engine exits");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let refused = particles_rs_command()
        .args([
            "serve",
            "--http",
            "--listen",
            "0.0.0.0:0",
            "--no-sidecar",
            "--store",
        ])
        .arg(&store)
        .env_remove("PARTICLES_API_KEY")
        .output()
        .expect("runs");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr)
        .contains("Refusing to start: bearer auth is disabled"));
}

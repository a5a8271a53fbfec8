//! A scripted HTTP/1.1 server on loopback: each connection gets the next scripted
//! step and every request is recorded. Replies close the connection, so each
//! attempt of a client arrives on a connection of its own.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
    time::Duration,
};

use serde_json::Value;

/// What the server does with one connection.
#[derive(Debug, Clone)]
pub enum Step {
    /// Reply with a status, extra headers and a body.
    Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request, then say nothing for this long and close.
    Hang(Duration),
    /// Read the request and close without replying.
    Close,
}

impl Step {
    /// A JSON reply.
    pub fn json(status: u16, body: Value) -> Step {
        Step::Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// A reply with a raw body.
    pub fn text(status: u16, body: &str) -> Step {
        Step::Reply {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.to_owned(),
        }
    }

    /// The same step with one more header.
    pub fn with_header(self, name: &str, value: &str) -> Step {
        match self {
            Step::Reply {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Step::Reply {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }
}

pub struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    pub fn start(steps: Vec<Step>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        thread::spawn(move || {
            let mut steps = steps.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let step = steps
                    .next()
                    .unwrap_or_else(|| Step::text(599, "no more scripted replies"));
                let recorded = Arc::clone(&recorded);
                thread::spawn(move || serve(stream, step, &recorded));
            }
        });
        Server { port, requests }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests
            .lock()
            .expect("no test thread panicked")
            .clone()
    }
}

fn serve(stream: TcpStream, step: Step, recorded: &Mutex<Vec<Recorded>>) {
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    recorded
        .lock()
        .expect("no test thread panicked")
        .push(request);
    let mut stream = reader.into_inner();
    match step {
        Step::Reply {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
        }
        Step::Hang(pause) => thread::sleep(pause),
        Step::Close => {}
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}

//! The HTTP control: git's own smart-HTTP server, `git http-backend`, run
//! as a CGI program by a small HTTP/1.1 server on loopback, with the same
//! rules as refstore's servers: anyone may fetch; a push needs a user of
//! the credentials (401 asks for one, a wrong password gets 401 again)
//! and one of the writers (403 otherwise).
//!
//! One request per connection (`Connection: close`); request bodies in
//! `Content-Length` or chunked form; `Content-Encoding: gzip` is left to
//! http-backend, which undoes it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct CgiServer {
    pub addr: String,
    stop: Arc<AtomicBool>,
}

struct Rules {
    root: PathBuf,
    /// "user:password" lines.
    users: String,
    writers: Vec<String>,
    backend: PathBuf,
}

impl CgiServer {
    /// Serves the repositories below `root` with `users` ("user:password"
    /// lines); `writers` may push.
    pub fn start(root: &Path, users: &str, writers: &[&str]) -> CgiServer {
        let exec_path = Command::new("git").arg("--exec-path").output().unwrap();
        let backend =
            Path::new(String::from_utf8_lossy(&exec_path.stdout).trim()).join("git-http-backend");
        let rules = Arc::new(Rules {
            root: root.to_owned(),
            users: users.to_owned(),
            writers: writers.iter().map(|w| w.to_string()).collect(),
            backend,
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let rules = rules.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &rules);
                });
            }
        });
        CgiServer { addr, stop }
    }
}

impl Drop for CgiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread up so that it sees the flag.
        let _ = TcpStream::connect(&self.addr);
    }
}

struct Request {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Request> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or("").to_owned();
    let target = words.next().unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let mut request = Request {
        method,
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        body: Vec::new(),
    };
    if request
        .header("Transfer-Encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            request.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = request.header("Content-Length") {
        let mut body = vec![0; len.parse().unwrap_or(0)];
        reader.read_exact(&mut body)?;
        request.body = body;
    }
    Ok(request)
}

/// The user that `authorization` (a Basic header) logs in, or `Err` for a
/// wrong one.
fn login(rules: &Rules, authorization: Option<&str>) -> Result<Option<String>, ()> {
    use base64::Engine;
    let Some(value) = authorization else {
        return Ok(None);
    };
    let encoded = value.strip_prefix("Basic ").ok_or(())?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| ())?;
    let pair = String::from_utf8(decoded).map_err(|_| ())?;
    if rules.users.lines().any(|l| l == pair) {
        Ok(Some(pair.split(':').next().unwrap().to_owned()))
    } else {
        Err(())
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &str,
    body: &[u8],
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

fn serve(stream: TcpStream, rules: &Rules) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut stream = stream;
    let request = read_request(&mut reader)?;
    let pushing = request.query.contains("service=git-receive-pack")
        || request.path.ends_with("/git-receive-pack");
    let user = match login(rules, request.header("Authorization")) {
        Ok(user) => user,
        Err(()) => {
            return respond(
                &mut stream,
                "401 Unauthorized",
                "WWW-Authenticate: Basic realm=\"git\"\r\n",
                b"wrong user or password\n",
            )
        }
    };
    if pushing {
        match &user {
            None => {
                return respond(
                    &mut stream,
                    "401 Unauthorized",
                    "WWW-Authenticate: Basic realm=\"git\"\r\n",
                    b"a push needs a user\n",
                )
            }
            Some(user) if !rules.writers.contains(user) => {
                let message = format!("user '{user}' may not push\n");
                return respond(&mut stream, "403 Forbidden", "", message.as_bytes());
            }
            Some(_) => {}
        }
    }
    let mut body_file = tempfile::tempfile()?;
    body_file.write_all(&request.body)?;
    std::io::Seek::rewind(&mut body_file)?;
    let mut cmd = Command::new(&rules.backend);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &rules.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &rules.root)
        .env("REQUEST_METHOD", &request.method)
        .env("PATH_INFO", &request.path)
        .env("QUERY_STRING", &request.query)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", request.body.len().to_string())
        .stdin(Stdio::from(body_file))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (header, variable) in [
        ("Content-Type", "CONTENT_TYPE"),
        ("Content-Encoding", "HTTP_CONTENT_ENCODING"),
        ("Git-Protocol", "GIT_PROTOCOL"),
    ] {
        if let Some(value) = request.header(header) {
            cmd.env(variable, value);
        }
    }
    if let Some(user) = &user {
        cmd.env("REMOTE_USER", user);
    }
    let output = cmd.output()?;
    let out = output.stdout;
    // CGI: headers, a blank line, the body; "Status:" gives the status.
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| (p, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2)));
    let Some((end, gap)) = split else {
        return respond(&mut stream, "500 Internal Server Error", "", &out);
    };
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let mut status = "200 OK".to_owned();
    let mut headers = String::new();
    for line in head.lines() {
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("Status") => {
                status = value.trim().to_owned()
            }
            Some((name, value)) => headers.push_str(&format!("{name}: {}\r\n", value.trim())),
            None => {}
        }
    }
    respond(&mut stream, &status, &headers, &out[end + gap..])
}

//! A guard in front of tower-lsp's reader: a malformed message or a wrong `Content-Length` must
//! neither end the session nor leave the server reading and answering nothing.
//!
//! tower-lsp-server decodes stdin with tokio-util's `FramedRead`, which trusts every
//! `Content-Length`: one that is a byte short leaves the rest of the message in front of the
//! next header, and from then on every frame is read from the wrong place, so the server stays
//! alive but never answers again (and a client that sees a live process does not restart it).
//! So this task frames the input itself ([`Decoder`]) and hands tower-lsp only well-formed
//! frames:
//!
//! - A frame whose body is a JSON-RPC message passes through unchanged.
//! - A body that is not one, while the bytes after it start the next header (or nothing comes
//!   for [`STALL`]), is a bad message in good framing: it becomes a request to [`INVALID_MESSAGE_METHOD`] (keeping the original
//!   `id` when one can be read, else `null`), whose handler answers with the JSON-RPC error.
//! - A `Content-Length` that disagrees with the body (too short, too long, missing, or absurd)
//!   is caught because LSP bodies are JSON objects, whose end can be found by counting
//!   brackets: the object is read by its own extent and the stream resynchronises after it.
//!   A too-long length on the last message the client sent is caught once the input has been
//!   quiet for [`STALL`].
//! - Bytes that are no header are skipped up to the next `Content-Length` header, and logged.
//! - When the stream cannot be recovered (it ends inside a message, or sends more garbage than
//!   [`Limits::junk`]), the guard ends tower-lsp's input and reports the stream broken, so
//!   the process exits with a non-zero status and the client restarts it.
//!
//! Every skip and every repair is a line on stderr.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Request, Response};

/// The internal method a malformed message is turned into.
pub const INVALID_MESSAGE_METHOD: &str = "$/pt2lsp/invalidMessage";

/// How long the input may be quiet, in the middle of a frame whose JSON body has already ended,
/// before the frame's `Content-Length` is taken to be too long. A correct frame whose body ends
/// early can only be padded with whitespace, which no client sends, so waiting longer would
/// only keep a client waiting for its answer.
pub const STALL: Duration = Duration::from_millis(500);

/// The header name resynchronisation looks for, in lower case (matched ignoring case).
const CONTENT_LENGTH: &[u8] = b"content-length";

/// Why a line is garbage. The same whatever the line, so that the report of a run of garbage
/// does not depend on where the reads split it; the log shows the bytes themselves.
const NOT_A_HEADER: &str = "not a header line";

/// How much of the skipped bytes a log line shows.
const PREVIEW_BYTES: usize = 80;

/// Bounds on what the guard buffers before it gives up on a frame or on the stream.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A header block longer than this is garbage, not a header.
    pub header: usize,
    /// A message body longer than this is refused: it can only be a broken client.
    pub message: usize,
    /// How far past a too-short `Content-Length` the guard looks for the end of the body.
    pub overrun: usize,
    /// Garbage past this many bytes in a row, without one header, ends the session.
    pub junk: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header: 8 * 1024,
            message: 256 * 1024 * 1024,
            overrun: 1024 * 1024,
            junk: 64 * 1024 * 1024,
        }
    }
}

/// Starts the guard on `input`; tower-lsp reads the returned stream instead. The flag turns
/// true, before the stream ends, when the guard stopped because the input could not be
/// recovered: the caller then exits with a failure whatever the client asked for.
pub fn guard<I>(input: I) -> (DuplexStream, Arc<AtomicBool>)
where
    I: AsyncRead + Unpin + Send + 'static,
{
    let (reader, mut writer) = tokio::io::duplex(64 * 1024);
    let broken = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&broken);
    tokio::spawn(async move {
        if let Err(problem) = pump(input, &mut writer, Limits::default(), STALL).await {
            super::log_stderr(&format!(
                "{problem}; stopping, so that the editor can start the server again"
            ));
            flag.store(true, Ordering::SeqCst);
        }
        // Dropping the writer ends tower-lsp's input only now, after the flag is set.
        drop(writer);
    });
    (reader, broken)
}

/// Copies well-formed frames from `input` to `output` until the input ends cleanly (`Ok`) or
/// cannot be recovered (`Err`, saying why).
async fn pump<I: AsyncRead + Unpin>(
    mut input: I,
    output: &mut (impl AsyncWrite + Unpin),
    limits: Limits,
    stall: Duration,
) -> Result<(), String> {
    let mut decoder = Decoder::new(limits);
    let mut chunk = vec![0; 64 * 1024];
    let mut eof = false;
    let mut stalled = false;
    loop {
        let event = match decoder.step(eof, stalled) {
            Step::Event(event) => event,
            Step::End => return Ok(()),
            Step::Fatal(problem) => return Err(problem),
            Step::NeedMore => {
                let read = input.read(&mut chunk);
                // Only a frame in progress can need the stall timer; between frames the client
                // may be quiet for hours.
                let read = if decoder.has_partial_frame() && !stalled {
                    let Ok(read) = tokio::time::timeout(stall, read).await else {
                        stalled = true;
                        continue;
                    };
                    read
                } else {
                    read.await
                };
                match read {
                    Ok(0) => eof = true,
                    Ok(count) => {
                        decoder.push(&chunk[..count]);
                        stalled = false;
                    }
                    Err(error) => {
                        return Err(format!("reading the client's messages failed: {error}"));
                    }
                }
                continue;
            }
        };
        stalled = false;
        let body = match event {
            Event::Message { body, note } => {
                if let Some(note) = note {
                    super::log_stderr(&note);
                }
                body
            }
            Event::Invalid { body, problem } => {
                super::log_stderr(&problem);
                replacement(&body, &problem)
            }
            Event::Skipped {
                bytes,
                preview,
                why,
            } => {
                super::log_stderr(&format!(
                    "skipped {bytes} bytes that are no message ({why}); they start with {preview}"
                ));
                continue;
            }
        };
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        let written = async {
            output.write_all(header.as_bytes()).await?;
            output.write_all(&body).await?;
            output.flush().await
        };
        if written.await.is_err() {
            // The server has stopped reading: it received `exit`.
            return Ok(());
        }
    }
}

/// What the decoder makes of the input so far.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Event(Event),
    /// Nothing can be decided before more input comes (never returned at the end of input).
    NeedMore,
    /// The input ended between frames.
    End,
    /// The input cannot be recovered.
    Fatal(String),
}

#[derive(Debug, PartialEq, Eq)]
enum Event {
    /// A JSON-RPC message for tower-lsp; `note` says how it was repaired, when it was.
    Message { body: Vec<u8>, note: Option<String> },
    /// A frame that is no JSON-RPC message: the client gets an error response.
    Invalid { body: Vec<u8>, problem: String },
    /// Bytes that were no frame, dropped while looking for the next header.
    Skipped {
        bytes: usize,
        preview: String,
        why: String,
    },
}

/// Frames a byte stream; a pure state machine over a buffer, so that tests can feed it any
/// split of the input.
struct Decoder {
    limits: Limits,
    buffer: Vec<u8>,
    /// Where the unread input starts in `buffer`; consumed bytes are dropped before a read.
    start: usize,
    /// The garbage being skipped, while no header has been found after it.
    junk: Option<Junk>,
    /// The structure of the pending frame's body, scanned as far as it has come.
    scan: Scanner,
}

struct Junk {
    bytes: usize,
    preview: Vec<u8>,
    why: String,
}

/// A parsed header block.
enum Header {
    /// No blank line yet, and nothing wrong so far.
    Incomplete,
    /// Not a header: why.
    Junk(String),
    /// `size` bytes of header; the body's length, or why the header gives none.
    Complete {
        size: usize,
        length: Result<usize, String>,
    },
}

impl Decoder {
    fn new(limits: Limits) -> Self {
        Self {
            limits,
            buffer: Vec::new(),
            start: 0,
            junk: None,
            scan: Scanner::default(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    fn input(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// Whether a frame has begun and not ended: the only time the client's silence means
    /// something.
    fn has_partial_frame(&self) -> bool {
        self.junk.is_none() && !self.input().is_empty()
    }

    /// Scans the pending frame's body, which starts `size` bytes into the input.
    fn scan_body(&mut self, size: usize) -> Scan {
        self.scan.advance(&self.buffer[self.start + size..])
    }

    /// Drops `count` bytes of input; the scan of a frame's body ends with the frame (and only
    /// then: a scan started over at every read would be quadratic in a large body).
    fn consume(&mut self, count: usize) {
        if count > 0 {
            self.start += count;
            self.scan = Scanner::default();
        }
    }

    /// Takes `count` bytes as a body, starting `from` bytes into the input, and consumes
    /// through its end.
    fn take(&mut self, from: usize, count: usize) -> Vec<u8> {
        let body = self.input()[from..from + count].to_vec();
        self.consume(from + count);
        body
    }

    fn step(&mut self, eof: bool, stalled: bool) -> Step {
        if self.junk.is_some() {
            return self.skip_to_header(0, eof, "");
        }
        // Blank lines between frames are harmless, and some clients send them.
        let blank = self
            .input()
            .iter()
            .take_while(|byte| byte.is_ascii_whitespace())
            .count();
        self.consume(blank);
        if self.input().is_empty() {
            return if eof { Step::End } else { Step::NeedMore };
        }
        match parse_header(self.input(), self.limits.header) {
            Header::Incomplete if eof => Step::Fatal(format!(
                "the input ended inside a message header ({} bytes)",
                self.input().len()
            )),
            Header::Incomplete => Step::NeedMore,
            Header::Junk(why) => self.skip_to_header(1, eof, &why),
            Header::Complete { size, length } => match length {
                Ok(length) if length <= self.limits.message => {
                    self.framed(size, length, eof, stalled)
                }
                Ok(length) => self.unframed(
                    size,
                    eof,
                    &format!(
                        "a Content-Length of {length} bytes is past the limit of {}",
                        self.limits.message
                    ),
                ),
                Err(why) => self.unframed(size, eof, &why),
            },
        }
    }

    /// A frame with a usable `Content-Length` after `size` bytes of header.
    fn framed(&mut self, size: usize, length: usize, eof: bool, stalled: bool) -> Step {
        let available = self.input().len() - size;
        if available < length {
            let scan = self.scan_body(size);
            if let Scan::Ended(end) = scan {
                // A body that is one JSON value followed by more than whitespace can never be
                // a message, whatever else comes: the length is too long, and the value is the
                // message.
                let followed = skip_whitespace(&self.input()[size..], end) < available;
                if followed || stalled {
                    return self.recover(
                        size,
                        end,
                        format!(
                            "a message's Content-Length said {length} bytes but its JSON ended after {end}; read it by its JSON and resynchronised"
                        ),
                    );
                }
            }
            if eof {
                return Step::Fatal(format!(
                    "the input ended inside a message: {available} of its {length} bytes came"
                ));
            }
            if stalled && scan == Scan::NotJson {
                // No JSON object starts the body, so it is no message, and the client is waiting
                // for an answer, not sending the rest: skip to the next header instead of
                // waiting for bytes that may never come.
                self.consume(size);
                return Step::Event(Event::Invalid {
                    body: Vec::new(),
                    problem: format!(
                        "a message of {length} bytes whose body is no JSON object, and the rest \
                         of which did not come"
                    ),
                });
            }
            return Step::NeedMore;
        }
        let body = &self.input()[size..size + length];
        let problem = match check(body) {
            Ok(()) => {
                let body = self.take(size, length);
                return Step::Event(Event::Message { body, note: None });
            }
            Err(problem) => problem,
        };
        let after = skip_whitespace(&self.input()[size..], length);
        let holds = match header_start(&self.input()[size + after..]) {
            Some(holds) => holds,
            // What follows decides, so wait for it, unless nothing more will come.
            None if !eof && !stalled => return Step::NeedMore,
            None => true,
        };
        if holds {
            // The framing holds: the message itself is bad.
            let body = self.take(size, length);
            return Step::Event(Event::Invalid { body, problem });
        }
        // Neither a header nor the end follows the body: the length is wrong.
        match self.scan_body(size) {
            Scan::Ended(end) if end != length => self.recover(
                size,
                end,
                format!(
                    "a message's Content-Length said {length} bytes but its JSON ended after {end}; read it by its JSON and resynchronised"
                ),
            ),
            Scan::Incomplete
                if !eof && !stalled && available - length <= self.limits.overrun =>
            {
                Step::NeedMore
            }
            // The frame's bytes are dropped; what follows them is skipped up to the next header.
            Scan::Ended(_) | Scan::Incomplete | Scan::NotJson => {
                let body = self.take(size, length);
                Step::Event(Event::Invalid { body, problem })
            }
        }
    }

    /// A header block of `size` bytes without a usable length (`why`): the body is read by its
    /// JSON.
    fn unframed(&mut self, size: usize, eof: bool, why: &str) -> Step {
        match self.scan_body(size) {
            Scan::Ended(end) => {
                self.recover(size, end, format!("{why}; read the message by its JSON"))
            }
            Scan::Incomplete if eof => Step::Fatal(format!(
                "{why}, and the input ended inside the message that followed"
            )),
            Scan::Incomplete if self.input().len() - size <= self.limits.message => Step::NeedMore,
            Scan::Incomplete | Scan::NotJson => {
                self.consume(size);
                Step::Event(Event::Invalid {
                    body: Vec::new(),
                    problem: format!("{why}, and no JSON message follows the header"),
                })
            }
        }
    }

    /// The JSON value of `end` bytes after `size` bytes of header, as a message when it is one.
    fn recover(&mut self, size: usize, end: usize, note: String) -> Step {
        let body = self.take(size, end);
        Step::Event(match check(&body) {
            Ok(()) => Event::Message {
                body,
                note: Some(note),
            },
            Err(problem) => Event::Invalid {
                body,
                problem: format!("{note}: {problem}"),
            },
        })
    }

    /// Drops input up to the next complete header that has a `Content-Length` at or after
    /// `from`; `why` says why the input at hand is no header. One run of garbage is one
    /// [`Event::Skipped`], however the input was split into reads.
    fn skip_to_header(&mut self, mut from: usize, eof: bool, why: &str) -> Step {
        loop {
            let input = self.input();
            let found = find_ignoring_case(input, from, CONTENT_LENGTH);
            // Without a match, the last bytes may be the start of a header still coming.
            let cut = match found {
                Some(position) => position,
                None if eof => input.len(),
                None => input
                    .len()
                    .saturating_sub(CONTENT_LENGTH.len() - 1)
                    .max(from.min(input.len())),
            };
            let junk = self.junk.get_or_insert_with(|| Junk {
                bytes: 0,
                preview: Vec::new(),
                why: why.to_owned(),
            });
            junk.bytes += cut;
            let room = PREVIEW_BYTES.saturating_sub(junk.preview.len());
            junk.preview
                .extend_from_slice(&self.buffer[self.start..self.start + cut.min(room)]);
            self.consume(cut);
            if found.is_some() {
                match parse_header(self.input(), self.limits.header) {
                    // `Content-Lengthy`, or a header name inside a string: keep looking.
                    Header::Junk(_) => {
                        from = 1;
                        continue;
                    }
                    Header::Incomplete if !eof => return Step::NeedMore,
                    Header::Incomplete | Header::Complete { .. } => {}
                }
            }
            if found.is_some() || eof {
                let junk = self.junk.take().unwrap_or_else(|| unreachable!());
                return Step::Event(Event::Skipped {
                    bytes: junk.bytes,
                    preview: quote(&junk.preview),
                    why: junk.why,
                });
            }
            if self
                .junk
                .as_ref()
                .is_some_and(|junk| junk.bytes > self.limits.junk)
            {
                return Step::Fatal(format!(
                    "more than {} bytes arrived without one message header",
                    self.limits.junk
                ));
            }
            return Step::NeedMore;
        }
    }
}

/// Parses the header block at the start of `input`: lines of `Name: value`, ended by an empty
/// line. Garbage is recognised as soon as a line cannot be a header, not only at its end.
fn parse_header(input: &[u8], max_header: usize) -> Header {
    let mut length = Err("a message header without Content-Length".to_owned());
    let mut position = 0;
    loop {
        let Some(newline) = input[position..].iter().position(|&byte| byte == b'\n') else {
            // A line still coming is judged by its name so far; a lone `\r` may start the
            // blank line that ends the header.
            let partial = &input[position..];
            let partial = partial.strip_suffix(b"\r").unwrap_or(partial);
            let name = partial
                .split(|&byte| byte == b':')
                .next()
                .unwrap_or_default();
            if !name.trim_ascii_end().iter().all(|&byte| is_token(byte)) {
                return Header::Junk(NOT_A_HEADER.to_owned());
            }
            if input.len() > max_header {
                return Header::Junk(format!("a header longer than {max_header} bytes"));
            }
            return Header::Incomplete;
        };
        let line = &input[position..position + newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        position += newline + 1;
        if position > max_header {
            return Header::Junk(format!("a header longer than {max_header} bytes"));
        }
        if line.is_empty() {
            return Header::Complete {
                size: position,
                length,
            };
        }
        let Some(colon) = line.iter().position(|&byte| byte == b':') else {
            return Header::Junk(NOT_A_HEADER.to_owned());
        };
        let name = line[..colon].trim_ascii_end();
        if name.is_empty() || !name.iter().all(|&byte| is_token(byte)) {
            return Header::Junk(NOT_A_HEADER.to_owned());
        }
        if name.eq_ignore_ascii_case(CONTENT_LENGTH) {
            let value = line[colon + 1..].trim_ascii();
            length = std::str::from_utf8(value)
                .ok()
                .filter(|value| {
                    !value.is_empty() && value.bytes().all(|byte| byte.is_ascii_digit())
                })
                .and_then(|value| value.parse::<usize>().ok())
                .ok_or_else(|| {
                    format!("a Content-Length of {} is no number of bytes", quote(value))
                });
        }
    }
}

/// A header name's characters (RFC 9110's `tchar`).
fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Whether `bytes` start a header: both of LSP's headers begin with `Content-`. `None` when
/// too few bytes have come to tell.
fn header_start(bytes: &[u8]) -> Option<bool> {
    const PREFIX: &[u8] = b"content-";
    let shared = bytes.len().min(PREFIX.len());
    if !bytes[..shared].eq_ignore_ascii_case(&PREFIX[..shared]) {
        Some(false)
    } else if shared == PREFIX.len() {
        Some(true)
    } else {
        None
    }
}

fn skip_whitespace(bytes: &[u8], from: usize) -> usize {
    from + bytes[from..]
        .iter()
        .take_while(|byte| byte.is_ascii_whitespace())
        .count()
}

fn find_ignoring_case(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from >= haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
        .map(|position| from + position)
}

fn quote(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(PREVIEW_BYTES)];
    format!("\"{}\"", String::from_utf8_lossy(shown).escape_debug())
}

/// How far a JSON object or array at the start of a body extends, found by counting brackets
/// outside strings; incremental, so a body arriving in pieces is scanned once.
#[derive(Debug, Default)]
struct Scanner {
    position: usize,
    depth: usize,
    started: bool,
    in_string: bool,
    escaped: bool,
    done: Option<Scan>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// The value ends after this many bytes.
    Ended(usize),
    /// The value has not ended in the bytes so far.
    Incomplete,
    /// The body does not start with an object or an array, or stops being JSON before the
    /// value ends: no message.
    NotJson,
}

impl Scanner {
    /// Scans `body`, which holds at least the bytes of the previous call.
    fn advance(&mut self, body: &[u8]) -> Scan {
        if let Some(done) = self.done {
            return done;
        }
        while let Some(&byte) = body.get(self.position) {
            self.position += 1;
            if !self.started {
                match byte {
                    b'{' | b'[' => {
                        self.started = true;
                        self.depth = 1;
                    }
                    byte if byte.is_ascii_whitespace() => {}
                    _ => return *self.done.insert(Scan::NotJson),
                }
            } else if self.in_string {
                if byte < 0x20 {
                    // JSON escapes control characters in strings: a raw line break means the
                    // string never ended and a header follows.
                    return *self.done.insert(Scan::NotJson);
                } else if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
            } else {
                match byte {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            return *self.done.insert(Scan::Ended(self.position));
                        }
                    }
                    // Outside strings JSON has only punctuation, numbers, true, false and
                    // null; anything else (the `C` of a header) means the value is broken.
                    byte if byte.is_ascii_whitespace()
                        || b",:-+.eEtruefalsn".contains(&byte)
                        || byte.is_ascii_digit() => {}
                    _ => return *self.done.insert(Scan::NotJson),
                }
            }
        }
        Scan::Incomplete
    }
}

/// Whether tower-lsp can decode `body`, with the reason when it cannot.
fn check(body: &[u8]) -> Result<(), String> {
    // tower-lsp skips empty bodies itself.
    if body.is_empty() {
        return Ok(());
    }
    let request = serde_json::from_slice::<Request>(body);
    if request.is_ok() || serde_json::from_slice::<Response>(body).is_ok() {
        return Ok(());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(_) => Err("received a JSON value that is no JSON-RPC message".to_owned()),
        Err(error) => Err(format!("received malformed JSON: {error}")),
    }
}

/// The request that stands in for a malformed message.
fn replacement(body: &[u8], problem: &str) -> Vec<u8> {
    let value = serde_json::from_slice::<Value>(body).ok();
    let id = value
        .as_ref()
        .and_then(|value| value.get("id"))
        .filter(|id| id.is_i64() || id.is_string())
        .cloned()
        .unwrap_or(Value::Null);
    let code = if value.is_some() {
        ErrorCode::InvalidRequest
    } else {
        ErrorCode::ParseError
    };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": INVALID_MESSAGE_METHOD,
        "params": {"code": code.code(), "message": problem},
    })
    .to_string()
    .into_bytes()
}

/// The handler of [`INVALID_MESSAGE_METHOD`]: the error the malformed message deserves.
pub fn invalid_message_error(mut params: Value) -> Error {
    let code = params["code"]
        .as_i64()
        .map_or(ErrorCode::ParseError, ErrorCode::from);
    let message = match params["message"].take() {
        Value::String(message) => message,
        _ => "malformed message".to_owned(),
    };
    Error {
        code,
        message: message.into(),
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: i64, text: &str) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": "test/echo", "params": {"text": text}})
            .to_string()
            .into_bytes()
    }

    /// A frame whose `Content-Length` is off by `error` bytes.
    fn frame(body: &[u8], error: isize) -> Vec<u8> {
        let length = body.len().checked_add_signed(error).unwrap();
        let mut frame = format!("Content-Length: {length}\r\n\r\n").into_bytes();
        frame.extend_from_slice(body);
        frame
    }

    /// What the decoder makes of `input` fed in pieces of `piece` bytes, never stalled, then
    /// the end of input; the last step is `End` or `Fatal`.
    fn decode_with(input: &[u8], piece: usize, limits: Limits) -> Vec<Step> {
        let mut decoder = Decoder::new(limits);
        let mut pieces = input.chunks(piece.max(1));
        let mut steps = Vec::new();
        let mut eof = false;
        loop {
            match decoder.step(eof, false) {
                Step::NeedMore => match pieces.next() {
                    Some(piece) => decoder.push(piece),
                    None => eof = true,
                },
                last @ (Step::End | Step::Fatal(_)) => {
                    steps.push(last);
                    return steps;
                }
                step @ Step::Event(_) => steps.push(step),
            }
        }
    }

    /// [`decode_with`] at every piece size from one byte to the whole input, which must all
    /// agree: framing may not depend on how the input was split into reads.
    fn decode(input: &[u8]) -> Vec<Step> {
        let whole = decode_with(input, input.len(), Limits::default());
        for piece in [1, 2, 3, 7, 16, 50] {
            assert_eq!(
                decode_with(input, piece, Limits::default()),
                whole,
                "pieces of {piece} bytes"
            );
        }
        whole
    }

    fn messages(steps: &[Step]) -> Vec<Vec<u8>> {
        steps
            .iter()
            .filter_map(|step| match step {
                Step::Event(Event::Message { body, .. }) => Some(body.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn good_frames_pass_unchanged_whatever_the_reads() {
        let bodies = [request(1, "a"), request(2, "{[\"\\\"}"), request(3, "")];
        let mut input = Vec::new();
        for body in &bodies {
            input.extend(frame(body, 0));
        }
        // Another header beside Content-Length, and blank lines between frames.
        input.extend(b"\r\n\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        input.extend(frame(&request(4, "x"), 0));
        let steps = decode(&input);
        let mut expected = bodies.to_vec();
        expected.push(request(4, "x"));
        assert_eq!(messages(&steps), expected);
        assert_eq!(steps.len(), 5, "{steps:?}");
        assert!(
            steps[..4]
                .iter()
                .all(|step| matches!(step, Step::Event(Event::Message { note: None, .. }))),
            "{steps:?}"
        );
        assert_eq!(steps[4], Step::End);
    }

    #[test]
    fn a_short_content_length_loses_no_message() {
        for error in [-1, -2, -10] {
            let mut input = frame(&request(1, "short"), error);
            input.extend(frame(&request(2, "next"), 0));
            let steps = decode(&input);
            assert_eq!(
                messages(&steps),
                [request(1, "short"), request(2, "next")],
                "{error}: {steps:?}"
            );
            let Step::Event(Event::Message {
                note: Some(note), ..
            }) = &steps[0]
            else {
                panic!("{steps:?}");
            };
            assert!(note.contains("Content-Length"), "{note}");
        }
    }

    #[test]
    fn a_long_content_length_loses_no_message() {
        for error in [1, 5, 40, 10_000] {
            let mut input = frame(&request(1, "long"), error);
            input.extend(frame(&request(2, "next"), 0));
            input.extend(frame(&request(3, "last"), 0));
            let steps = decode(&input);
            assert_eq!(
                messages(&steps),
                [request(1, "long"), request(2, "next"), request(3, "last")],
                "{error}: {steps:?}"
            );
        }
    }

    #[test]
    fn a_long_content_length_on_the_last_message_is_read_once_the_client_is_quiet() {
        let mut decoder = Decoder::new(Limits::default());
        decoder.push(&frame(&request(1, "long"), 3));
        assert_eq!(decoder.step(false, false), Step::NeedMore);
        assert!(decoder.has_partial_frame());
        let Step::Event(Event::Message {
            body,
            note: Some(_),
        }) = decoder.step(false, true)
        else {
            panic!("the stalled frame is not read by its JSON");
        };
        assert_eq!(body, request(1, "long"));
        // A body that is no JSON object, whose length is never reached, is dropped once the
        // client is quiet, and what follows it is skipped to the next header.
        decoder.push(b"Content-Length: 900\r\n\r\n<html>");
        assert_eq!(decoder.step(false, false), Step::NeedMore);
        assert!(matches!(
            decoder.step(false, true),
            Step::Event(Event::Invalid { .. })
        ));
        decoder.push(&frame(&request(3, "after"), 0));
        assert!(matches!(
            decoder.step(false, false),
            Step::Event(Event::Skipped { bytes: 6, .. })
        ));
        assert_eq!(
            messages(&[decoder.step(false, false)]),
            [request(3, "after")]
        );
        // A body still coming is not cut short by a stall.
        let whole = frame(&request(2, "slow"), 0);
        decoder.push(&whole[..whole.len() - 1]);
        assert_eq!(decoder.step(false, true), Step::NeedMore);
        decoder.push(&whole[whole.len() - 1..]);
        assert_eq!(
            messages(&[decoder.step(false, false)]),
            [request(2, "slow")]
        );
    }

    #[test]
    fn junk_between_messages_is_skipped_and_logged() {
        let mut input = frame(&request(1, "a"), 0);
        input.extend(b"}}garbage: not a header\r\n\0\xff\r\n");
        input.extend(frame(&request(2, "b"), 0));
        input.extend(b"{\"a\": 1}xContent-Lengthy\r\n");
        input.extend(frame(&request(3, "c"), 0));
        let steps = decode(&input);
        assert_eq!(
            messages(&steps),
            [request(1, "a"), request(2, "b"), request(3, "c")]
        );
        let skipped: Vec<(usize, &str)> = steps
            .iter()
            .filter_map(|step| match step {
                Step::Event(Event::Skipped { bytes, preview, .. }) => {
                    Some((*bytes, preview.as_str()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(skipped.len(), 2, "{steps:?}");
        assert_eq!(skipped[0].0, 29);
        assert!(skipped[0].1.starts_with("\"}}garbage"), "{skipped:?}");
        assert_eq!(skipped[1].0, 26, "{skipped:?}");
    }

    #[test]
    fn a_header_without_a_usable_content_length_is_read_by_its_json() {
        for header in [
            &b"Content-Type: application/vscode-jsonrpc\r\n\r\n"[..],
            b"Content-Length: twelve\r\n\r\n",
            b"Content-Length: 99999999999999999999999\r\n\r\n",
        ] {
            let mut input = header.to_vec();
            input.extend(request(1, "a"));
            input.extend(frame(&request(2, "b"), 0));
            let steps = decode(&input);
            assert_eq!(
                messages(&steps),
                [request(1, "a"), request(2, "b")],
                "{steps:?}"
            );
        }
    }

    #[test]
    fn bad_messages_in_good_frames_become_errors_with_their_id() {
        let mut input = frame(b"{\"jsonrpc\": \"2.0\", \"id\": ", 0);
        input.extend(frame(b"{\"id\": 3, \"x\": 1}", 0));
        input.extend(frame(b"[1, 2]", 0));
        input.extend(frame(&request(4, "ok"), 0));
        let steps = decode(&input);
        let invalid: Vec<&[u8]> = steps
            .iter()
            .filter_map(|step| match step {
                Step::Event(Event::Invalid { body, .. }) => Some(body.as_slice()),
                _ => None,
            })
            .collect();
        assert_eq!(invalid.len(), 3, "{steps:?}");
        let errors: Vec<Value> = invalid
            .iter()
            .map(|body| serde_json::from_slice(&replacement(body, "problem")).unwrap())
            .collect();
        assert_eq!(errors[0]["id"], Value::Null);
        assert_eq!(errors[0]["params"]["code"], -32700);
        assert_eq!(errors[1]["id"], 3);
        assert_eq!(errors[1]["params"]["code"], -32600);
        assert_eq!(errors[2]["method"], INVALID_MESSAGE_METHOD);
        assert_eq!(messages(&steps), [request(4, "ok")]);
    }

    #[test]
    fn brackets_and_headers_inside_strings_do_not_mislead_the_recovery() {
        let text = "Content-Length: 2\r\n\r\n{}\"]}{[ \\\\";
        let mut input = frame(&request(1, text), -4);
        input.extend(frame(&request(2, text), 7));
        input.extend(frame(&request(3, text), 0));
        let steps = decode(&input);
        assert_eq!(
            messages(&steps),
            [request(1, text), request(2, text), request(3, text)],
            "{steps:?}"
        );
    }

    #[test]
    fn an_unrecoverable_stream_is_fatal_and_a_clean_end_is_not() {
        let whole = frame(&request(1, "a"), 0);
        assert_eq!(decode(&whole).last(), Some(&Step::End));
        assert_eq!(decode(b"").last(), Some(&Step::End));
        // The end of input inside a body, or inside a header.
        assert!(matches!(
            decode(&whole[..whole.len() - 3]).last(),
            Some(Step::Fatal(problem)) if problem.contains("inside a message")
        ));
        assert!(matches!(
            decode(b"Content-Length: 12\r\n").last(),
            Some(Step::Fatal(problem)) if problem.contains("header")
        ));
        // Garbage past the limit, however it arrives.
        let limits = Limits {
            junk: 1000,
            ..Limits::default()
        };
        let garbage = b"x{}\0".repeat(1250);
        for piece in [1, 64, 5000] {
            let steps = decode_with(&garbage, piece, limits);
            assert!(
                matches!(steps.last(), Some(Step::Fatal(problem)) if problem.contains("1000 bytes")),
                "{steps:?}"
            );
        }
        // Garbage below the limit is skipped, then the input ends.
        let steps = decode_with(&garbage[..500], 64, limits);
        assert!(
            matches!(steps[0], Step::Event(Event::Skipped { bytes: 500, .. })),
            "{steps:?}"
        );
        assert_eq!(steps[1], Step::End);
    }

    #[test]
    fn a_large_body_arriving_in_small_reads_is_scanned_once() {
        // A 4 MB document in 4 KiB reads: scanning the body again at every read would take a
        // thousand passes over megabytes (tens of seconds); once, it takes milliseconds.
        let body = request(1, &"x = torch.ones(3)\n".repeat(230_000));
        let input = frame(&body, 0);
        let start = std::time::Instant::now();
        let steps = decode_with(&input, 4096, Limits::default());
        assert_eq!(messages(&steps), [body]);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    /// One piece of a generated input: a frame with its length off by `error`, or raw bytes.
    #[derive(Debug, Clone)]
    enum Piece {
        Frame { text: String, error: i8 },
        Raw(Vec<u8>),
    }

    fn piece() -> impl proptest::strategy::Strategy<Value = Piece> {
        use proptest::prelude::*;
        prop_oneof![
            3 => ("[ -~]{0,40}", -4i8..=4).prop_map(|(text, error)| Piece::Frame { text, error }),
            1 => proptest::collection::vec(any::<u8>(), 0..30).prop_map(Piece::Raw),
            1 => Just(Piece::Raw(b"Content-Length: 3\r\n\r\n".to_vec())),
            1 => Just(Piece::Raw(b"{\"id\": [".to_vec())),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Whatever the input and however it is split, the decoder ends (never waits at the end
        /// of input, never panics), and no message is lost to a wrong length: only garbage
        /// right before a frame can cost it.
        #[test]
        fn any_input_ends_and_good_frames_survive(
            pieces in proptest::collection::vec(piece(), 0..12),
            split in 1usize..64,
        ) {
            let mut input = Vec::new();
            let mut expected = Vec::new();
            let mut clean = true;
            for (index, piece) in pieces.iter().enumerate() {
                match piece {
                    Piece::Frame { text, error } => {
                        let body = request(i64::try_from(index).unwrap(), text);
                        let error = isize::from(*error);
                        input.extend(frame(&body, error));
                        // Every message after a frame (even a misframed one) is recovered,
                        // and so is a misframed one when a frame follows it.
                        let followed = matches!(pieces.get(index + 1), Some(Piece::Frame { .. }));
                        if clean && (error == 0 || followed) {
                            expected.push(body);
                        }
                        clean = true;
                    }
                    Piece::Raw(bytes) => {
                        input.extend(bytes);
                        clean = false;
                    }
                }
            }
            let steps = decode_with(&input, split, Limits::default());
            proptest::prop_assert!(matches!(steps.last(), Some(Step::End | Step::Fatal(_))));
            let delivered = messages(&steps);
            for body in expected {
                proptest::prop_assert!(delivered.contains(&body), "{:?} not in {steps:?}", String::from_utf8_lossy(&body));
            }
        }
    }

    #[tokio::test]
    async fn the_pump_reads_a_stalled_frame_and_reports_a_broken_stream() {
        let (mut client, server) = tokio::io::duplex(1024);
        let pump = tokio::spawn(async move {
            let mut output = Vec::new();
            let result = pump(
                server,
                &mut output,
                Limits::default(),
                Duration::from_millis(50),
            )
            .await;
            (result, output)
        });
        // The answer to a long frame comes while the client waits, its input still open.
        client.write_all(&frame(&request(1, "a"), 2)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Then a body that never ends.
        client
            .write_all(&frame(&request(2, "b"), 0)[..30])
            .await
            .unwrap();
        drop(client);
        let (result, output) = pump.await.unwrap();
        let output = String::from_utf8(output).unwrap();
        assert!(
            output.ends_with(&String::from_utf8(request(1, "a")).unwrap()),
            "{output}"
        );
        assert!(result.unwrap_err().contains("inside a message"));
    }
}

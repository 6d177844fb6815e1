//! A guard in front of tower-lsp's reader: one malformed message must not end the session.
//!
//! tower-lsp-server decodes stdin with tokio-util's `FramedRead`, which ends the stream after
//! the first decoding error, and the server stops with it. So this task reads the frames
//! first, passes every well-formed JSON-RPC message through unchanged, and replaces each
//! malformed one with a request to [`INVALID_MESSAGE_METHOD`] (keeping the original `id`
//! when one can be read, else `null`), whose handler answers with the JSON-RPC error. The
//! client gets its error response, and a line goes to stderr.

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Request, Response};

/// The internal method a malformed message is turned into.
pub const INVALID_MESSAGE_METHOD: &str = "$/pt2lsp/invalidMessage";

/// Messages larger than this are skipped unread: they can only be a broken client.
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// A header line longer than this is garbage, not a header.
const MAX_HEADER_LINE: u64 = 8 * 1024;

/// Starts the guard on `input`; tower-lsp reads the returned stream instead.
pub fn guard<I>(input: I) -> DuplexStream
where
    I: AsyncRead + Unpin + Send + 'static,
{
    let (reader, writer) = tokio::io::duplex(64 * 1024);
    tokio::spawn(pump(BufReader::new(input), writer));
    reader
}

async fn pump<I: AsyncRead + Unpin>(mut input: BufReader<I>, mut output: impl AsyncWrite + Unpin) {
    loop {
        let body = match read_frame(&mut input).await {
            Ok(Some(Ok(body))) => body,
            Ok(Some(Err(problem))) => {
                super::log_stderr(&problem);
                replacement(&[], &problem)
            }
            Ok(None) => return,
            Err(error) => {
                super::log_stderr(&format!("reading the client's messages failed: {error}"));
                return;
            }
        };
        let body = match check(&body) {
            Ok(()) => body,
            Err(problem) => {
                super::log_stderr(&problem);
                replacement(&body, &problem)
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
            return;
        }
    }
}

/// Reads one frame. `Ok(None)` at the end of input; `Ok(Some(Err(_)))` for a frame that was
/// skipped, saying why.
async fn read_frame<I: AsyncRead + Unpin>(
    input: &mut BufReader<I>,
) -> std::io::Result<Option<Result<Vec<u8>, String>>> {
    let mut length = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        if (&mut *input)
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .await?
            == 0
        {
            return Ok(None);
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim();
        if line.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let Some(length) = length else {
        return Ok(Some(Err(
            "skipped a message without a valid Content-Length header".to_owned(),
        )));
    };
    if length > MAX_MESSAGE_BYTES {
        tokio::io::copy(
            &mut (&mut *input).take(length as u64),
            &mut tokio::io::sink(),
        )
        .await?;
        return Ok(Some(Err(format!("skipped a message of {length} bytes"))));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await?;
    Ok(Some(Ok(body)))
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

    #[tokio::test]
    async fn malformed_frames_become_invalid_message_requests() {
        let input: &[u8] = b"Content-Length: 5\r\n\r\n{\"a\":Content-Length: 17\r\n\r\n{\"id\": 3, \"x\": 1}garbage\r\n\r\n";
        let mut output = Vec::new();
        pump(BufReader::new(input), &mut output).await;
        let output = String::from_utf8(output).unwrap();
        let bodies: Vec<Value> = output
            .split("Content-Length: ")
            .skip(1)
            .map(|frame| serde_json::from_str(frame.split_once("\r\n\r\n").unwrap().1).unwrap())
            .collect();
        assert_eq!(bodies.len(), 3, "{output}");
        assert_eq!(bodies[0]["id"], Value::Null);
        assert_eq!(bodies[0]["params"]["code"], -32700);
        assert_eq!(bodies[1]["id"], 3);
        assert_eq!(bodies[1]["params"]["code"], -32600);
        assert_eq!(bodies[2]["method"], INVALID_MESSAGE_METHOD);
    }
}

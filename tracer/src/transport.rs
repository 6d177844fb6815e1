//! The worker's protocol channel: a Unix socket bound in the worker's private directory (fork
//! mode, on Unix), or a loopback TCP socket (spawn mode, and every platform without Unix
//! sockets). Either way the worker connects once and its hello carries the token it was started
//! with, which is what the manager trusts, not the address.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
#[cfg(unix)]
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
#[cfg(unix)]
use std::path::PathBuf;
use std::time::Duration;

/// Where the manager waits for the worker to connect.
pub enum Listener {
    #[cfg(unix)]
    Unix {
        listener: UnixListener,
        path: PathBuf,
    },
    Tcp(TcpListener),
}

impl Listener {
    /// A Unix socket `s` in `dir` when `unix` (and the platform has them), else a loopback TCP
    /// socket on a port the system picks. Non-blocking: see [`Listener::accept`].
    pub fn bind(dir: &Path, unix: bool) -> io::Result<Self> {
        #[cfg(unix)]
        if unix {
            let path = dir.join("s");
            let listener = UnixListener::bind(&path)?;
            listener.set_nonblocking(true)?;
            return Ok(Self::Unix { listener, path });
        }
        let _ = (dir, unix);
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        Ok(Self::Tcp(listener))
    }

    /// The worker's arguments that say where to connect: `--socket PATH` or `--tcp HOST:PORT`.
    pub fn worker_args(&self) -> io::Result<Vec<OsString>> {
        Ok(match self {
            #[cfg(unix)]
            Self::Unix { path, .. } => vec!["--socket".into(), path.into()],
            Self::Tcp(listener) => vec!["--tcp".into(), listener.local_addr()?.to_string().into()],
        })
    }

    /// The worker's connection, or `None` while it has not connected.
    pub fn accept(&self) -> io::Result<Option<Stream>> {
        let accepted = match self {
            #[cfg(unix)]
            Self::Unix { listener, .. } => {
                listener.accept().map(|(stream, _)| Stream::Unix(stream))
            }
            Self::Tcp(listener) => listener.accept().map(|(stream, _)| {
                // Nagle's delay would hold each short JSON line back.
                let _ = stream.set_nodelay(true);
                Stream::Tcp(stream)
            }),
        };
        match accepted {
            // Some platforms hand the listener's non-blocking mode on to the accepted stream.
            Ok(stream) => stream.set_blocking().map(|()| Some(stream)),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(error) => Err(error),
        }
    }
}

#[cfg(unix)]
impl Drop for Listener {
    fn drop(&mut self) {
        if let Self::Unix { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The connected protocol stream.
pub enum Stream {
    #[cfg(unix)]
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(match self {
            #[cfg(unix)]
            Self::Unix(stream) => Self::Unix(stream.try_clone()?),
            Self::Tcp(stream) => Self::Tcp(stream.try_clone()?),
        })
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Self::Unix(stream) => stream.set_read_timeout(timeout),
            Self::Tcp(stream) => stream.set_read_timeout(timeout),
        }
    }

    pub fn shutdown(&self) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Self::Unix(stream) => stream.shutdown(Shutdown::Both),
            Self::Tcp(stream) => stream.shutdown(Shutdown::Both),
        }
    }

    fn set_blocking(&self) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Self::Unix(stream) => stream.set_nonblocking(false),
            Self::Tcp(stream) => stream.set_nonblocking(false),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Self::Unix(stream) => stream.read(buffer),
            Self::Tcp(stream) => stream.read(buffer),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Self::Unix(stream) => stream.write(buffer),
            Self::Tcp(stream) => stream.write(buffer),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Self::Unix(stream) => stream.flush(),
            Self::Tcp(stream) => stream.flush(),
        }
    }
}

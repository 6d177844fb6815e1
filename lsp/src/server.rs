//! The `LanguageServer` implementation, generated from the routing table in `handlers/mod.rs`
//! by [`routes`]: each method calls its handler.
//!
//! Notification handlers that touch documents are synchronous functions, called before any
//! `.await`, which keeps edits in arrival order. Request handlers run in their own task, so a
//! bug that panics in one answers that request with an error instead of ending the server; a
//! panic in a notification handler is caught where it happens, logged, and the notification
//! dropped. Either way the server keeps serving.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Error, Result};

use super::session::Session;

/// The language server tower-lsp drives; its methods are generated from the routing table.
pub struct Server {
    pub(crate) session: Arc<Session>,
    pub(crate) shutdown_requested: Arc<AtomicBool>,
}

impl Server {
    pub fn new(client: Client, shutdown_requested: Arc<AtomicBool>) -> Self {
        Self {
            session: Arc::new(Session::new(client, Arc::clone(&shutdown_requested))),
            shutdown_requested,
        }
    }
}

/// Answers a malformed message (see `transport`) with the error it deserves. A function of the
/// server, as tower-lsp's custom methods are, though it needs none of its state.
pub fn invalid_message(_: &Server, params: serde_json::Value) -> std::future::Ready<Result<()>> {
    std::future::ready(Err(super::transport::invalid_message_error(params)))
}

/// Runs a request handler in its own task; a panic becomes an internal error response.
pub(crate) async fn guarded<T, F>(future: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    tokio::spawn(future).await.unwrap_or_else(|error| {
        super::log_stderr(&format!("request handler failed: {error}"));
        Err(Error::internal_error())
    })
}

/// Runs a notification handler; a panic is logged and the notification dropped. The handlers
/// keep no lock across a panic point that a later notification would wait on (`DashMap`
/// shards are released by unwinding), so the next notification is served normally.
pub(crate) fn guarded_notification(method: &str, handler: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(handler)) {
        let reason = panic
            .downcast_ref::<&str>()
            .map(ToString::to_string)
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        super::log_stderr(&format!("notification handler failed: {method}: {reason}"));
    }
}

/// Expands the routing table of `handlers/mod.rs`: one `pub mod` per handler and the
/// `LanguageServer` implementation, each method a call of its handler's `handle` (a request in
/// its own task, through [`guarded`]; a notification under [`guarded_notification`]), plus
/// [`advertise`], which collects what each request's handler announces.
macro_rules! routes {
    ($($kind:ident $name:ident($params:ty) $(-> $answer:ty)? $(, $method:literal)?;)*) => {
        $(pub mod $name;)*

        #[allow(clippy::wildcard_imports)]
        use tower_lsp_server::ls_types::*;

        /// What the routed requests' handlers advertise.
        pub fn advertise(capabilities: &mut ServerCapabilities) {
            $($crate::server::route!(@advertise $kind $name, capabilities);)*
        }

        impl tower_lsp_server::LanguageServer for $crate::server::Server {
            $($crate::server::route!($kind $name($params) $(-> $answer)? $(, $method)?);)*

            async fn shutdown(&self) -> tower_lsp_server::jsonrpc::Result<()> {
                self.shutdown_requested
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }

            async fn notebook_did_save(&self, _: DidSaveNotebookDocumentParams) {
                // The cells are the editor's, already analysed as they changed.
            }
        }
    };
}
pub(crate) use routes;

/// One line of the routing table (see [`routes`]).
macro_rules! route {
    (request $name:ident($params:ty) -> $answer:ty) => {
        async fn $name(&self, params: $params) -> tower_lsp_server::jsonrpc::Result<$answer> {
            $crate::server::guarded($name::handle(std::sync::Arc::clone(&self.session), params))
                .await
        }
    };
    (notification $name:ident($params:ty), $method:literal) => {
        async fn $name(&self, params: $params) {
            $crate::server::guarded_notification($method, || {
                $name::handle(&self.session, params);
            });
        }
    };
    (@advertise request $name:ident, $capabilities:ident) => {
        $name::advertise($capabilities)
    };
    (@advertise notification $name:ident, $capabilities:ident) => {};
}
pub(crate) use route;

#[cfg(test)]
mod tests {
    use super::*;

    /// Set for the child process that [`a_panicking_request_handler_answers_with_an_error_and_logs_it`]
    /// starts: the child panics in a handler, the parent reads its stderr.
    const PANICKING_CHILD: &str = "PT2LSP_TEST_PANICKING_HANDLER";

    #[test]
    fn a_panicking_request_handler_answers_with_an_error_and_logs_it() {
        if std::env::var_os(PANICKING_CHILD).is_some() {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let response: Result<()> =
                runtime.block_on(guarded(async { panic!("a bug in a handler") }));
            assert_eq!(response.unwrap_err(), Error::internal_error());
            // The runtime, and the server it stands for, is still serving.
            assert_eq!(runtime.block_on(guarded(async { Ok(7) })), Ok(7));
            guarded_notification("textDocument/didOpen", || {
                panic!("a bug in a notification handler")
            });
            let mut served = false;
            guarded_notification("textDocument/didOpen", || served = true);
            assert!(served);
            return;
        }
        // The test name without the crate: the form libtest's filter takes.
        let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
        let name =
            format!("{module}::a_panicking_request_handler_answers_with_an_error_and_logs_it");
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(PANICKING_CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "{child:?}\n{stderr}");
        let logged: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("pt2lsp: request handler failed"))
            .collect();
        assert_eq!(logged.len(), 1, "{stderr}");
        assert!(logged[0].contains("a bug in a handler"), "{}", logged[0]);
        let notification: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("pt2lsp: notification handler failed"))
            .collect();
        assert_eq!(
            notification,
            [
                "pt2lsp: notification handler failed: textDocument/didOpen: a bug in a notification handler"
            ],
            "{stderr}"
        );
    }
}

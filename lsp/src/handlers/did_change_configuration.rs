//! `workspace/didChangeConfiguration`: replace the editor's settings and re-analyse.
//!
//! Clients that use the pull model send no settings here (`null` or `{}`) and answer
//! `workspace/configuration` instead; the server asks for the `pt2lsp` section then.

use std::sync::Arc;

use serde_json::Value;
use tower_lsp_server::ls_types::{ConfigurationItem, DidChangeConfigurationParams, MessageType};

use crate::session::Session;

// The routing table (`handlers/mod.rs`) passes every notification's parameters by value.
#[allow(clippy::needless_pass_by_value)]
pub fn handle(session: &Arc<Session>, params: DidChangeConfigurationParams) {
    let pushed = match &params.settings {
        Value::Null => false,
        Value::Object(object) => !object.is_empty(),
        _ => true,
    };
    if pushed || !session.flags().pull_configuration {
        apply(session, &params.settings);
        return;
    }
    let session = Arc::clone(session);
    tokio::spawn(async move {
        let item = ConfigurationItem {
            scope_uri: None,
            section: Some("pt2lsp".to_owned()),
        };
        match session.client.configuration(vec![item]).await {
            Ok(mut values) if !values.is_empty() => apply(&session, &values.swap_remove(0)),
            Ok(_) => apply(&session, &Value::Null),
            Err(error) => session.log(
                MessageType::WARNING,
                format!("workspace/configuration failed: {error}"),
            ),
        }
    });
}

/// Installs one settings value as the editor layer, reports what it made of it, re-analyses.
pub fn apply(session: &Arc<Session>, value: &Value) {
    for warning in session.set_editor_options(value) {
        session.log(MessageType::WARNING, warning);
    }
    let resolved = session.resolve_settings(None);
    session.log(
        MessageType::INFO,
        format!("editor settings: {}", resolved.describe()),
    );
    session.schedule_all();
}

//! One small handler per request or notification: convert in, call the session, convert out.

pub mod code_action;
pub mod code_lens;
pub mod diagnostic;
pub mod did_change;
pub mod did_change_configuration;
pub mod did_change_watched_files;
pub mod did_change_workspace_folders;
pub mod did_close;
pub mod did_open;
pub mod did_save;
pub mod document_symbol;
pub mod execute_command;
pub mod hover;
pub mod initialize;
pub mod inlay_hint;
pub mod notebook;

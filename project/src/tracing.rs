//! The tracer's settings vocabulary: how the worker starts a job ([`StartMethod`]) and what it
//! lowers an exported program for ([`DeploymentTarget`]). The configuration and the command line
//! name them, the tracer obeys them; they live here, below both, so that the project layer
//! never imports the tracer.

use std::fmt;

use serde::{Serialize, Serializer};

/// How the worker runs each job in a process of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMethod {
    /// A warm zygote forks a child per job: the fastest start, on Linux.
    Fork,
    /// A pool of warm processes started fresh (multiprocessing's `spawn`), one job each: for
    /// macOS, where forking after importing torch is unsafe, and Windows, which cannot fork.
    Spawn,
}

impl StartMethod {
    /// Fork on Linux, spawn elsewhere: what is safe where pt2lsp runs.
    pub fn platform_default() -> Self {
        if cfg!(target_os = "linux") {
            Self::Fork
        } else {
            Self::Spawn
        }
    }

    /// The setting's value, as written in `start-method` and `--start-method`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "fork" => Some(Self::Fork),
            "spawn" => Some(Self::Spawn),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fork => "fork",
            Self::Spawn => "spawn",
        }
    }

    /// `PT2LSP_START_METHOD` when it names one (tests run the suites both ways with it), else
    /// the platform's default.
    pub fn from_environment() -> Self {
        std::env::var("PT2LSP_START_METHOD")
            .ok()
            .and_then(|value| Self::parse(value.trim()))
            .unwrap_or_else(Self::platform_default)
    }
}

/// One deployment target; the worker's `lowering.TARGETS` lists the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeploymentTarget {
    /// `run_decompositions()` to the core ATen opset (PT701).
    CoreAten,
    /// `torch.export.save`, `torch.export.load` and a run against eager (PT702).
    Pt2,
    /// `torch.onnx.export(..., dynamo=True)` (PT703).
    Onnx,
    /// `torch._inductor.aoti_compile_and_package` (PT704).
    Aoti,
    /// `to_edge_transform_and_lower` with XNNPACK, then `to_executorch()` (PT705, PT706).
    ExecuTorch,
}

impl DeploymentTarget {
    pub const ALL: &[DeploymentTarget] = &[
        DeploymentTarget::CoreAten,
        DeploymentTarget::Pt2,
        DeploymentTarget::Onnx,
        DeploymentTarget::Aoti,
        DeploymentTarget::ExecuTorch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentTarget::CoreAten => "core-aten",
            DeploymentTarget::Pt2 => "pt2",
            DeploymentTarget::Onnx => "onnx",
            DeploymentTarget::Aoti => "aoti",
            DeploymentTarget::ExecuTorch => "executorch",
        }
    }

    /// The target named `name`, or a message naming the known ones (and the one meant, for a
    /// typo).
    pub fn parse(name: &str) -> Result<Self, String> {
        let wanted = name.trim().to_ascii_lowercase();
        if let Some(target) = Self::ALL
            .iter()
            .copied()
            .find(|target| target.as_str() == wanted)
        {
            return Ok(target);
        }
        let known: Vec<&str> = Self::ALL.iter().map(|target| target.as_str()).collect();
        let near = known
            .iter()
            .find(|candidate| {
                candidate.starts_with(&wanted) || wanted.starts_with(*candidate) || {
                    let (a, b) = (candidate.as_bytes(), wanted.as_bytes());
                    a.len() == b.len() && a.iter().zip(b).filter(|(x, y)| x != y).count() <= 1
                }
            })
            .map(|candidate| format!("; did you mean `{candidate}`?"))
            .unwrap_or_default();
        Err(format!(
            "unknown deployment target `{name}`{near} (known targets: {})",
            known.join(", ")
        ))
    }

    /// The extension of the artefact `pt2lsp export --target` writes (`model.pte`), for a target
    /// that writes one of its own: `pt2` is the `.pt2` export writes anyway, `core-aten` a check.
    pub fn artefact_extension(self) -> Option<&'static str> {
        match self {
            DeploymentTarget::Onnx => Some("onnx"),
            DeploymentTarget::Aoti => Some("aoti.pt2"),
            DeploymentTarget::ExecuTorch => Some("pte"),
            DeploymentTarget::CoreAten | DeploymentTarget::Pt2 => None,
        }
    }

    /// How an editor's command names the artefact (`Export to ONNX`).
    pub fn artefact_title(self) -> Option<&'static str> {
        match self {
            DeploymentTarget::Onnx => Some("Export to ONNX"),
            DeploymentTarget::Aoti => Some("Export to AOTInductor"),
            DeploymentTarget::ExecuTorch => Some("Export to ExecuTorch"),
            DeploymentTarget::CoreAten | DeploymentTarget::Pt2 => None,
        }
    }

    /// Every name in `names`, in `ALL`'s order without repeats, or the first unknown name's
    /// message.
    pub fn parse_all<S: AsRef<str>>(names: &[S]) -> Result<Vec<Self>, String> {
        let mut targets = Vec::new();
        for name in names {
            for part in name
                .as_ref()
                .split(',')
                .filter(|part| !part.trim().is_empty())
            {
                let target = Self::parse(part)?;
                if !targets.contains(&target) {
                    targets.push(target);
                }
            }
        }
        targets.sort();
        Ok(targets)
    }
}

impl fmt::Display for DeploymentTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeploymentTarget {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The union of two target lists (the run's and an entrypoint's), in `ALL`'s order.
pub fn union(a: &[DeploymentTarget], b: &[DeploymentTarget]) -> Vec<DeploymentTarget> {
    let mut out: Vec<DeploymentTarget> = a.iter().chain(b).copied().collect();
    out.sort();
    out.dedup();
    out
}

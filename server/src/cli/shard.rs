//! `check --trace --shard K/N`: the share of the entrypoints one CI machine traces.
//!
//! Each entrypoint goes to one shard by a stable hash of its file's path (relative to the
//! project root, with `/` separators) and its name, so every machine of a matrix, whatever its
//! checkout directory or platform, agrees on the split without talking to the others, and the
//! N shards together trace each entrypoint exactly once. The hash is FNV-1a, written out here
//! because `std`'s hasher may change between Rust releases and would reshuffle the shards.
//! Static analysis is not split: it is cheap, and every shard reports it.

use std::fmt;
use std::path::{Component, Path};
use std::str::FromStr;

use pt2lsp_tracer::batch::PlannedJob;
use pt2lsp_tracer::diagnostics::normalized;

/// One shard of N: `index` counts from 1, as users write `--shard 1/4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = || {
            format!(
                "`{text}` is no shard: write K/N with 1 <= K <= N, such as 1/4 for the first of four"
            )
        };
        let (index, count) = text.split_once('/').ok_or_else(usage)?;
        let index: u64 = index.trim().parse().map_err(|_| usage())?;
        let count: u64 = count.trim().parse().map_err(|_| usage())?;
        if index == 0 || count == 0 || index > count {
            return Err(usage());
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the entrypoint named by `key` (see [`job_key`]) is this shard's.
    pub fn contains(self, key: &str) -> bool {
        fnv1a(key.as_bytes()) % self.count + 1 == self.index
    }

    /// Keeps this shard's jobs, in their order.
    pub fn select(self, jobs: Vec<PlannedJob>, root: &Path) -> Vec<PlannedJob> {
        jobs.into_iter()
            .filter(|job| self.contains(&job_key(job, root)))
            .collect()
    }
}

/// What names an entrypoint the same way on every machine: its file relative to `root` with
/// `/` separators, then its name (`model` for a file's own, else the configured `name`, else
/// its `model` reference).
pub fn job_key(job: &PlannedJob, root: &Path) -> String {
    let file = normalized(&job.spec.file);
    let root = normalized(root);
    let relative = file.strip_prefix(&root).unwrap_or(&file);
    let path: Vec<String> = relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let name = match &job.spec.entrypoint {
        None => "model",
        Some(entry) => entry.name.as_deref().unwrap_or(&entry.model),
    };
    format!("{}::{name}", path.join("/"))
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::*;
    use pt2lsp_tracer::EntrypointSpec;
    use pt2lsp_tracer::batch::{self, BatchOptions, Candidate};

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        assert_eq!("2/5".parse(), Ok(Shard { index: 2, count: 5 }));
        assert_eq!(
            " 1 / 1 ".parse::<Shard>().map(|shard| shard.to_string()),
            Ok("1/1".into())
        );
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "1/2/3", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_hash_is_stable_across_builds() {
        // Changing these values reshuffles every user's CI matrix.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"models/net.py::model"), 0x8c7e_854b_4ca1_d2a1);
    }

    /// A project of convention files and configured entrypoints, planned as `check --trace`
    /// plans it.
    fn planned(root: &Path) -> Vec<PlannedJob> {
        let texts: Vec<(std::path::PathBuf, String)> = (0..40)
            .map(|index| {
                let path = root.join(format!("models/m{index}.py"));
                let text = format!(
                    "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.ones(1, 2),)\nBUILD{index} = model\n"
                );
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &text).unwrap();
                (path, text)
            })
            .collect();
        let candidates: Vec<Candidate<'_>> = texts
            .iter()
            .map(|(path, text)| Candidate { path, text })
            .collect();
        let entrypoints = (0..20)
            .map(|index| EntrypointSpec {
                targets: Vec::new(),
                name: (index % 2 == 0).then(|| format!("entry{index}")),
                model: format!("models.m{}:BUILD{}", index % 40, index % 40),
                example_args: None,
                example_kwargs: None,
                dynamic_shapes: None,
                strict: None,
                fake_weights: None,
                declared: None,
            })
            .collect();
        let options = BatchOptions {
            targets: Vec::new(),
            root: root.to_path_buf(),
            cwd: root.to_path_buf(),
            strict: false,
            timeout: Duration::from_secs(1),
            memory_limit_mb: None,
            entrypoints,
            scripts: Vec::new(),
        };
        let plan = batch::plan(&candidates, &options);
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
        plan.jobs
    }

    #[test]
    fn shards_partition_the_entrypoints_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = planned(dir.path());
        assert_eq!(jobs.len(), 60);
        let all: Vec<String> = jobs.iter().map(|job| job_key(job, dir.path())).collect();
        let distinct: BTreeSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), all.len(), "keys name entrypoints uniquely");
        for count in 1..=7 {
            let mut union = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let mine: Vec<String> = shard
                    .select(planned(dir.path()), dir.path())
                    .iter()
                    .map(|job| job_key(job, dir.path()))
                    .collect();
                if count <= 3 {
                    assert!(!mine.is_empty(), "{shard} is empty");
                }
                union.extend(mine);
            }
            let mut sorted_union = union.clone();
            sorted_union.sort();
            let mut sorted_all = all.clone();
            sorted_all.sort();
            // Equal as multisets: nothing lost, nothing traced twice.
            assert_eq!(sorted_union, sorted_all, "{count} shards");
        }
    }

    #[test]
    fn the_key_does_not_depend_on_the_checkout_directory() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let keys = |root: &Path| -> Vec<String> {
            planned(root).iter().map(|job| job_key(job, root)).collect()
        };
        let first = keys(one.path());
        assert_eq!(first, keys(two.path()));
        assert!(
            first.contains(&"models/m3.py::model".to_owned()),
            "{first:?}"
        );
        assert!(
            first.contains(&"models/m2.py::entry2".to_owned()),
            "{first:?}"
        );
        assert!(
            first.contains(&"models/m1.py::models.m1:BUILD1".to_owned()),
            "{first:?}"
        );
    }
}

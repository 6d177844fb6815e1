//! Generated files of the shapes that were slow in the language server (issue 16: one huge
//! function, thousands of module classes with a `forward` each, huge literals, long string
//! concatenations, deeply nested calls, thousands of fixable diagnostics): the analysis of each
//! must grow linearly with its size.
//!
//! No absolute time is asserted (speed is measured in bench/). Each shape is analysed at `n`
//! and at `4n`, the faster of two runs each, and the ratio must stay under [`MAX_RATIO`]:
//! linear work gives about 4, n·log n about 4.5 to 5, quadratic work 16. Before the module's
//! imports were gathered once per file, "classes with forwards" gave 10 at these sizes.

use std::fmt::Write;
use std::time::{Duration, Instant};

use pt2lsp_analyzer::{Settings, check};

/// Between linear (4) and quadratic (16), with room for a busy machine and for memory effects
/// of multi-megabyte inputs in the debug build.
const MAX_RATIO: f64 = 10.0;

/// The analysis stack of `pt2lsp check` and `pt2lsp serve`.
const ANALYSIS_STACK_BYTES: usize = 512 << 20;

const MODEL_HEAD: &str = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n";
const MODEL_TAIL: &str = "\n\nmodel = M()\nexample_args = (torch.randn(3),)\n";

fn repeated(n: usize, part: impl Fn(usize) -> String) -> String {
    (0..n).map(part).collect()
}

fn joined(n: usize, separator: &str, part: impl Fn(usize) -> String) -> String {
    (0..n).map(part).collect::<Vec<_>>().join(separator)
}

/// (name, base size, generator): the base size keeps each debug-build run at 10 ms or more,
/// where allocation and cache effects no longer dominate.
type Shape = (&'static str, usize, fn(usize) -> String);

fn shapes() -> Vec<Shape> {
    vec![
        ("one huge function", 20_000, |n| {
            format!(
                "def f(x):\n{}    return x\n",
                repeated(n, |i| format!("    y{i} = x * {i} + x\n"))
            )
        }),
        ("one huge forward", 1_000, |n| {
            format!(
                "{MODEL_HEAD}{}        return x{MODEL_TAIL}",
                repeated(n, |i| format!(
                    "        x = torch.relu(x) * {i}\n        y = x.shape[0] + {i}\n"
                ))
            )
        }),
        ("classes with forwards", 250, |n| {
            format!(
                "import torch\n{}",
                repeated(n, |i| format!(
                    "class C{i}(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = torch.nn.Linear(4, 4)\n    def forward(self, x):\n        if x.sum() > 0:\n            return self.l(x)\n        return x\n\n"
                ))
            )
        }),
        ("functions with fixable checks", 1_500, |n| {
            format!(
                "import torch\n{}{MODEL_HEAD}        return f0(x){MODEL_TAIL}",
                repeated(n, |i| format!(
                    "def f{i}(x):\n    if x.nonzero().shape[0] > {i}:\n        raise ValueError('x')\n    return x\n\n"
                ))
            )
        }),
        ("huge list literal", 40_000, |n| {
            format!("X = [{}]\n", joined(n, ", ", |i| i.to_string()))
        }),
        ("huge dict literal", 20_000, |n| {
            format!(
                "X = {{{}}}\n",
                joined(n, ", ", |i| format!("'k{i}': [{i}, {i}]"))
            )
        }),
        ("long string concatenation", 40_000, |n| {
            format!("X = {}\n", joined(n, " + ", |i| format!("'s{i}'")))
        }),
        ("long string concatenation in forward", 10_000, |n| {
            format!(
                "{MODEL_HEAD}        s = {}\n        return x{MODEL_TAIL}",
                joined(n, " + ", |i| format!("'s{i}'"))
            )
        }),
        ("deeply nested calls in forward", 2_000, |n| {
            format!(
                "{MODEL_HEAD}        return {}x{}{MODEL_TAIL}",
                "torch.relu(".repeat(n),
                ")".repeat(n)
            )
        }),
        ("long list of tensors in forward", 30_000, |n| {
            format!(
                "{MODEL_HEAD}        xs = [{}]\n        return torch.cat(xs){MODEL_TAIL}",
                joined(n, ", ", |_| "x".to_owned())
            )
        }),
    ]
}

/// The faster of two analyses of `text`, on a thread with the analysis stack.
fn analysis_time(text: String) -> Duration {
    std::thread::Builder::new()
        .stack_size(ANALYSIS_STACK_BYTES)
        .spawn(move || {
            (0..2)
                .map(|_| {
                    let start = Instant::now();
                    std::hint::black_box(check(&text, &Settings::default()));
                    start.elapsed()
                })
                .min()
                .expect("two runs")
        })
        .expect("an analysis thread")
        .join()
        .expect("the analysis does not panic")
}

#[test]
fn every_generated_shape_scales_linearly() {
    let mut report = String::new();
    let mut slow = Vec::new();
    for (name, base, generate) in shapes() {
        // A busy machine can slow one run; a shape fails only if three measurements agree.
        let mut ratio = f64::INFINITY;
        for _ in 0..3 {
            let small = analysis_time(generate(base));
            let large = analysis_time(generate(4 * base));
            // A floor keeps timer resolution out of the ratio of two very fast runs.
            let floor = Duration::from_micros(200);
            let measured = large.max(floor).as_secs_f64() / small.max(floor).as_secs_f64();
            let _ = writeln!(
                report,
                "{name}: {small:?} at n={base}, {large:?} at 4n: x{measured:.1}"
            );
            ratio = ratio.min(measured);
            if ratio <= MAX_RATIO {
                break;
            }
        }
        if ratio > MAX_RATIO {
            slow.push(name);
        }
    }
    eprintln!("{report}");
    assert!(
        slow.is_empty(),
        "these shapes grow faster than linearly (4x the input took over {MAX_RATIO}x the time): {slow:?}\n{report}"
    );
}

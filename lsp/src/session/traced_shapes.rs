//! The exported program's shapes in place of the inferred ones: after a trace of a document's
//! version, each assignment on a line where the graph made tensors shows the graph's shape, and
//! so does each later use of the name it binds (hover), until the name is bound again.

use std::collections::{BTreeMap, HashMap};

use pt2lsp_analyzer::{LineIndex, ShapeHint};

/// `shapes` with the traced shapes (by 1-based line, in graph order) put in: the names a line
/// binds, left to right, take the line's last tensors, in order (`q, k, v = x.chunk(3)`).
pub(super) fn overlay(
    text: &str,
    shapes: &[ShapeHint],
    traced: &HashMap<u32, Vec<String>>,
) -> Vec<ShapeHint> {
    let lines = LineIndex::new(text);
    let mut out = shapes.to_vec();
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&index| out[index].range.start());
    let line_of = |hint: &ShapeHint| lines.line_column(hint.range.start()).line + 1;

    let mut shown: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &index in &order {
        if out[index].binding && out[index].changed {
            shown.entry(line_of(&out[index])).or_default().push(index);
        }
    }
    let mut replaced: HashMap<usize, String> = HashMap::new();
    for (line, indices) in &shown {
        if let Some(graph) = traced.get(line) {
            for (index, shape) in indices.iter().rev().zip(graph.iter().rev()) {
                replaced.insert(*index, shape.clone());
            }
        }
    }
    // Each name's traced shape, as of the point reached in source order.
    let mut current: HashMap<&str, Option<String>> = HashMap::new();
    for &index in &order {
        let hint = &out[index];
        let Some(name) = text.get(hint.range.start().to_usize()..hint.range.end().to_usize())
        else {
            continue;
        };
        if hint.binding {
            match replaced.get(&index) {
                Some(shape) => {
                    current.insert(name, Some(shape.clone()));
                }
                // A binding to the same shape keeps what the name showed; a new one resets it.
                None if hint.changed => {
                    current.insert(name, None);
                }
                None => {}
            }
        } else if let Some(Some(shape)) = current.get(name) {
            replaced.insert(index, shape.clone());
        }
    }
    for (index, shape) in replaced {
        out[index].shape = shape;
        out[index].traced = true;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt2lsp_analyzer::{Settings, check};

    const SOURCE: &str = "\
import torch
import torch.nn as nn
from torch.export import Dim


class M(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, k, padding=k // 2)

    def forward(self, x):
        y = self.conv(x)
        a, b = y.chunk(2, dim=1)
        return a + y


import os

model = M(int(os.environ.get(\"KERNEL\", \"3\")))
example_args = (torch.randn(2, 3, 16, 16),)
dynamic_shapes = {\"x\": {0: Dim(\"batch\")}}
";

    fn shown(hints: &[ShapeHint]) -> Vec<(String, String, bool)> {
        let mut hints: Vec<&ShapeHint> = hints.iter().collect();
        hints.sort_by_key(|hint| hint.range.start());
        hints
            .iter()
            .map(|hint| {
                let name = &SOURCE[hint.range.start().to_usize()..hint.range.end().to_usize()];
                (name.to_owned(), hint.shape.clone(), hint.traced)
            })
            .collect()
    }

    #[test]
    fn the_graphs_shapes_replace_the_inferred_ones_on_their_lines_and_the_names_uses() {
        let inferred = check(SOURCE, &Settings::default()).shapes;
        // A kernel size read from the environment: the analysis knows `y`'s batch and
        // channels, not its spatial sizes.
        assert!(
            shown(&inferred).contains(&("y".to_owned(), "[batch, 8, _, _]".to_owned(), false)),
            "{inferred:?}"
        );
        // The graph: the convolution on line 12; the chunk's two parts on line 13.
        let four = "[batch, 4, 16, 16]".to_owned();
        let traced = HashMap::from([
            (12, vec!["[batch, 8, 16, 16]".to_owned()]),
            (13, vec![four.clone(), four.clone()]),
        ]);
        let eight = ("y".to_owned(), "[batch, 8, 16, 16]".to_owned(), true);
        let input = ("x".to_owned(), "[batch, 3, 16, 16]".to_owned(), false);
        assert_eq!(
            shown(&overlay(SOURCE, &inferred, &traced)),
            [
                input.clone(),
                eight.clone(),
                input,
                ("a".to_owned(), four.clone(), true),
                ("b".to_owned(), four.clone(), true),
                eight.clone(),
                ("a".to_owned(), four, true),
                eight,
            ]
        );
    }
}

//! einops' `rearrange` pattern (`'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'`): the shape it
//! gives a tensor, and the divisibility it asks of a dynamic dimension that a group splits.
//!
//! Measured with torch 2.15, `einops.rearrange` and the `einops.layers.torch.Rearrange` layer
//! alike: splitting a dynamic `height` into `(h p1)` with `p1=16` fails export with
//! "Constraints violated (height)" unless the `Dim` is declared a multiple of 16
//! (`16*_h`); a size that passes through a pattern (`'b n (h d) -> b h n d'`) keeps its symbol,
//! so a guard after it is the exporter's guard on the input's dimension.

use std::rc::Rc;

use super::symbolic::SymSize;
use super::value::{DimDecl, DimSize, TensorDims};

/// A parsed pattern: the input's groups and the output's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pattern {
    input: Vec<Group>,
    output: Vec<Group>,
}

/// One dimension of a side: axes multiplied into it (`(h p1)`, `b`, `()`), or `...`.
#[derive(Debug, Clone, PartialEq)]
enum Group {
    Axes(Vec<Axis>),
    Ellipsis,
}

#[derive(Debug, Clone, PartialEq)]
enum Axis {
    Named(String),
    /// `1`: an axis of size one.
    One,
}

/// A pattern with the axis sizes its call gives (`p1=16`): `rearrange(x, pattern, **axes)`,
/// or the `Rearrange(pattern, **axes)` layer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rearrangement {
    pub(crate) pattern: Pattern,
    pub(crate) given: Vec<(String, SymSize)>,
}

impl Rearrangement {
    pub(crate) fn apply(&self, input: &TensorDims) -> Option<Rearranged> {
        self.pattern.apply(input, &self.given)
    }
}

/// What a pattern does to one tensor.
pub(crate) struct Rearranged {
    pub(crate) dims: TensorDims,
    /// Dynamic dimensions a group splits by a size they may not be a multiple of, with the
    /// multiple the declaration needs.
    pub(crate) divisibility: Vec<(Rc<DimDecl>, i64)>,
}

impl Pattern {
    /// The pattern of `text` for `rearrange`, when it is one this module follows.
    pub(crate) fn parse(text: &str) -> Option<Pattern> {
        Pattern::parse_as(text, false)
    }

    /// The pattern of `text` for `reduce`: axes of the input the output leaves out (and an
    /// `...` it leaves out) are reduced.
    pub(crate) fn parse_reduction(text: &str) -> Option<Pattern> {
        Pattern::parse_as(text, true)
    }

    fn parse_as(text: &str, reduces: bool) -> Option<Pattern> {
        let (input, output) = text.split_once("->")?;
        let pattern = Pattern {
            input: side(input)?,
            output: side(output)?,
        };
        let named = |groups: &[Group]| {
            let mut names: Vec<String> = groups
                .iter()
                .flat_map(|group| match group {
                    Group::Axes(axes) => axes.clone(),
                    Group::Ellipsis => Vec::new(),
                })
                .filter_map(|axis| match axis {
                    Axis::Named(name) => Some(name),
                    Axis::One => None,
                })
                .collect();
            names.sort();
            names
        };
        // A rearrangement moves the same axes, a reduction drops some; a name only in the
        // output is `repeat`'s, which this does not follow.
        let ellipses = |groups: &[Group]| groups.iter().filter(|g| **g == Group::Ellipsis).count();
        let (input, output) = (named(&pattern.input), named(&pattern.output));
        let axes_match = if reduces {
            output.iter().all(|name| input.contains(name))
                && ellipses(&pattern.output) <= ellipses(&pattern.input)
        } else {
            input == output && ellipses(&pattern.input) == ellipses(&pattern.output)
        };
        (axes_match && ellipses(&pattern.input) <= 1).then_some(pattern)
    }

    /// The pattern applied to a tensor of shape `input`, with the axis sizes the call gives
    /// (`p1=16`, `h=self.heads`).
    pub(crate) fn apply(
        &self,
        input: &TensorDims,
        given: &[(String, SymSize)],
    ) -> Option<Rearranged> {
        let sizes = input.all_sizes()?;
        let explicit = self.input.iter().filter(|g| **g != Group::Ellipsis).count();
        if sizes.len() < explicit
            || (sizes.len() > explicit && !self.input.contains(&Group::Ellipsis))
        {
            return None;
        }
        let covered = sizes.len() - explicit;
        let mut axes: Vec<(String, Option<DimSize>)> = given
            .iter()
            .map(|(name, size)| (name.clone(), Some(DimSize::Sym(size.clone()))))
            .collect();
        let mut divisibility = Vec::new();
        let mut ellipsis: Vec<Option<DimSize>> = Vec::new();
        let mut at = 0;
        for group in &self.input {
            match group {
                Group::Ellipsis => {
                    ellipsis = sizes[at..at + covered].to_vec();
                    at += covered;
                }
                Group::Axes(group) => {
                    let size = sizes[at].clone();
                    at += 1;
                    split(group, size, &mut axes, &mut divisibility)?;
                }
            }
        }
        let mut output = Vec::new();
        for group in &self.output {
            match group {
                Group::Ellipsis => output.extend(ellipsis.iter().cloned()),
                Group::Axes(group) => {
                    let sizes: Option<Vec<Option<DimSize>>> = group
                        .iter()
                        .map(|axis| match axis {
                            Axis::One => Some(Some(DimSize::Sym(SymSize::constant(1)))),
                            Axis::Named(name) => axes
                                .iter()
                                .find(|(known, _)| known == name)
                                .map(|(_, size)| size.clone()),
                        })
                        .collect();
                    output.push(product(&sizes?));
                }
            }
        }
        Some(Rearranged {
            dims: TensorDims::from_sizes(output),
            divisibility,
        })
    }
}

/// Splits an input dimension of `size` into the axes of `group`: each axis the call or an
/// earlier group gave keeps its size, and the one left (at most one) is the quotient.
fn split(
    group: &[Axis],
    size: Option<DimSize>,
    axes: &mut Vec<(String, Option<DimSize>)>,
    divisibility: &mut Vec<(Rc<DimDecl>, i64)>,
) -> Option<()> {
    let known = |name: &str, axes: &[(String, Option<DimSize>)]| {
        axes.iter()
            .find(|(known, _)| known == name)
            .map(|(_, size)| size.clone())
    };
    let mut unknown: Option<&str> = None;
    let mut divisor: i64 = 1;
    for axis in group {
        match axis {
            Axis::One => {}
            Axis::Named(name) => match known(name, axes) {
                Some(Some(DimSize::Sym(sym))) if sym.as_constant().is_some() => {
                    divisor = divisor.checked_mul(sym.as_constant()?)?;
                }
                None if unknown.is_none() => unknown = Some(name),
                // An axis given as a dynamic size, one of unknown size, or a second axis left
                // to solve: the group cannot be solved.
                Some(_) | None => return None,
            },
        }
    }
    let Some(name) = unknown else {
        // Every axis is given: the dimension must be their product, which the pattern
        // checks at run time; the shape is what it was.
        return Some(());
    };
    let quotient = match size {
        // A lone axis is the dimension itself.
        size if divisor == 1 => size,
        Some(DimSize::Sym(sym)) if divisor > 0 => {
            if let Some(dim) = needs_multiple(&sym, divisor) {
                divisibility.push(dim);
            }
            sym.floor_div(&SymSize::constant(divisor))
                .map(DimSize::Sym)
                .or_else(|| sym.dims().next().map(|dim| DimSize::Derived(dim.clone())))
        }
        Some(DimSize::Sym(_)) => return None,
        Some(DimSize::Derived(dim)) => Some(DimSize::derived_from(&dim)),
        None => None,
    };
    axes.push((name.to_owned(), quotient));
    Some(())
}

/// The declared dimension `size` must be a multiple of for `divisor` to divide it, and that
/// multiple; `None` when every size the declaration allows divides (`16*_h` by 16), or when
/// the exporter refines or checks it itself (`Dim.AUTO`, a `ShapeVar`).
fn needs_multiple(size: &SymSize, divisor: i64) -> Option<(Rc<DimDecl>, i64)> {
    let (terms, constant, floor_divisor) = size.linear();
    let [(dim, coefficient)] = terms else {
        return None;
    };
    if floor_divisor != 1 || dim.automatic || dim.unbacked || constant % divisor != 0 {
        return None;
    }
    let multiple = divisor / gcd(coefficient.abs(), divisor);
    (multiple > 1).then(|| (dim.clone(), multiple))
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

/// The size of a group of axes: their product while it stays an expression over one `Dim`;
/// a size of unknown form that depends on a `Dim` when one of them does; static otherwise.
fn product(sizes: &[Option<DimSize>]) -> Option<DimSize> {
    // One axis is itself (a derived size keeps its identity).
    if let [size] = sizes {
        return size.clone();
    }
    let mut total = Some(SymSize::constant(1));
    let mut dynamic = None;
    for size in sizes {
        match size {
            Some(DimSize::Sym(sym)) => {
                if sym.is_dynamic() && dynamic.is_none() {
                    dynamic = sym.dims().next().cloned();
                }
                total = total.and_then(|total| total.mul(sym));
            }
            Some(DimSize::Derived(dim)) => {
                dynamic.get_or_insert_with(|| dim.clone());
                total = None;
            }
            None => total = None,
        }
    }
    match (total, dynamic) {
        (Some(total), _) => Some(DimSize::Sym(total)),
        (None, Some(dim)) => Some(DimSize::derived_from(&dim)),
        (None, None) => None,
    }
}

/// One side of a pattern: `b c (h p1) (w p2)`, `b ... d`.
fn side(text: &str) -> Option<Vec<Group>> {
    let mut groups = Vec::new();
    let mut open: Option<Vec<Axis>> = None;
    let spaced = text.replace('(', " ( ").replace(')', " ) ");
    for token in spaced.split_whitespace() {
        match token {
            "(" if open.is_none() => open = Some(Vec::new()),
            ")" => groups.push(Group::Axes(open.take()?)),
            "..." if open.is_none() => groups.push(Group::Ellipsis),
            token => {
                let axis = match token {
                    "1" => Axis::One,
                    name if name.chars().all(|c| c.is_alphanumeric() || c == '_')
                        && !name.starts_with(|c: char| c.is_ascii_digit()) =>
                    {
                        Axis::Named(name.to_owned())
                    }
                    _ => return None,
                };
                match &mut open {
                    Some(group) => group.push(axis),
                    None => groups.push(Group::Axes(vec![axis])),
                }
            }
        }
    }
    open.is_none().then_some(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(name: &str) -> Rc<DimDecl> {
        Rc::new(DimDecl {
            name: name.to_owned(),
            min: Some(32),
            max: Some(1024),
            bounds_unknown: false,
            automatic: false,
            unbacked: false,
            range: ruff_text_size::TextRange::default(),
            derived: false,
        })
    }

    fn shown(dims: &TensorDims) -> Vec<String> {
        dims.all_sizes()
            .unwrap()
            .iter()
            .map(|size| match size {
                Some(DimSize::Sym(sym)) => sym.to_string(),
                Some(DimSize::Derived(dim)) => format!("~{}", dim.name),
                None => "?".to_owned(),
            })
            .collect()
    }

    #[test]
    fn patches_split_a_dynamic_side_and_ask_a_multiple() {
        let pattern = Pattern::parse("b c (h p1) (w p2) -> b (h w) (p1 p2 c)").unwrap();
        let (height, width) = (dim("height"), dim("width"));
        let input = TensorDims::from_sizes(vec![
            None,
            Some(DimSize::Sym(SymSize::constant(3))),
            Some(DimSize::Sym(SymSize::dim(height.clone()))),
            Some(DimSize::Sym(SymSize::dim(width))),
        ]);
        let sixteen = SymSize::constant(16);
        let given = [
            ("p1".to_owned(), sixteen.clone()),
            ("p2".to_owned(), sixteen),
        ];
        let out = pattern.apply(&input, &given).unwrap();
        assert_eq!(shown(&out.dims), ["?", "~height", "768"]);
        let asked: Vec<(String, i64)> = out
            .divisibility
            .iter()
            .map(|(dim, multiple)| (dim.name.clone(), *multiple))
            .collect();
        assert_eq!(asked, [("height".to_owned(), 16), ("width".to_owned(), 16)]);
    }

    #[test]
    fn a_declared_multiple_divides_and_heads_keep_the_length() {
        let pattern = Pattern::parse("b (h p) -> b h p").unwrap();
        let half = SymSize::dim(dim("_h")).mul(&SymSize::constant(32)).unwrap();
        let input = TensorDims::from_sizes(vec![None, Some(DimSize::Sym(half))]);
        let out = pattern
            .apply(&input, &[("p".to_owned(), SymSize::constant(16))])
            .unwrap();
        assert!(out.divisibility.is_empty());
        assert_eq!(shown(&out.dims), ["?", "2*_h", "16"]);

        let heads = Pattern::parse("b n (h d) -> b h n d").unwrap();
        let seq = SymSize::dim(dim("seq"));
        let input = TensorDims::from_sizes(vec![
            None,
            Some(DimSize::Sym(seq)),
            Some(DimSize::Sym(SymSize::constant(64))),
        ]);
        let out = heads
            .apply(&input, &[("h".to_owned(), SymSize::constant(8))])
            .unwrap();
        assert_eq!(shown(&out.dims), ["?", "8", "seq", "8"]);
    }

    #[test]
    fn ellipsis_and_patterns_it_does_not_follow() {
        let pattern = Pattern::parse("b ... c -> b c ...").unwrap();
        let input = TensorDims::from_sizes(vec![
            None,
            Some(DimSize::Sym(SymSize::constant(7))),
            Some(DimSize::Sym(SymSize::constant(9))),
            Some(DimSize::Sym(SymSize::constant(3))),
        ]);
        let out = pattern.apply(&input, &[]).unwrap();
        assert_eq!(shown(&out.dims), ["?", "3", "7", "9"]);
        // `repeat`'s new axis, a reduction, an unbalanced parenthesis.
        assert!(Pattern::parse("b c -> b c r").is_none());
        assert!(Pattern::parse("b c h -> b c").is_none());
        let mean = Pattern::parse_reduction("b n c -> b c").unwrap();
        let input = TensorDims::from_sizes(vec![
            None,
            Some(DimSize::Sym(SymSize::dim(dim("seq")))),
            Some(DimSize::Sym(SymSize::constant(3))),
        ]);
        assert_eq!(shown(&mean.apply(&input, &[]).unwrap().dims), ["?", "3"]);
        assert!(Pattern::parse("b (c h -> b c h").is_none());
    }
}

//! Symbolic sizes: one tensor dimension as an expression over the entrypoint's `Dim`s.
//!
//! The exporter gives every dynamic dimension a symbol and computes every other size from those
//! symbols; a size here is the same thing in the user's names: `batch`, `dx + dy`,
//! `(dz + 1)//2`, `4*seq`, `2*(h//2)`. The expressions are linear in the `Dim`s with an
//! optional floor division by a constant, itself scaled and shifted by constants, which covers
//! what models do to sizes (concatenation, strided slices, flattening a dynamic dimension with
//! static ones, splitting heads, a stride-2 downsampling undone by a stride-2 upsampling).
//! Anything else
//! (a product of two `Dim`s, a size read from data) is not a `SymSize`: the caller keeps it
//! unknown rather than guess.

use std::fmt::{self, Write as _};
use std::rc::Rc;

use super::value::DimDecl;

/// `scale·((Σ coefficient·dim + constant) // divisor) + offset`, kept normalised: terms
/// sorted by the `Dim`'s name, no zero coefficient, `divisor >= 1`, a divisor that divides
/// every coefficient and the constant folded away, and, without a division, `scale == 1` and
/// `offset == 0` (they fold into the terms); with one, `scale >= 1` and `0 <= offset < scale`
/// (a multiple of `scale` folds into the constant).
#[derive(Debug, Clone)]
pub(crate) struct SymSize {
    terms: Vec<(Rc<DimDecl>, i64)>,
    constant: i64,
    divisor: i64,
    scale: i64,
    offset: i64,
}

/// Torch knows a `Dim` by its name: two `Dim("d")` written apart are one symbol.
impl PartialEq for SymSize {
    fn eq(&self, other: &SymSize) -> bool {
        self.constant == other.constant
            && self.divisor == other.divisor
            && self.scale == other.scale
            && self.offset == other.offset
            && self.terms.len() == other.terms.len()
            && self
                .terms
                .iter()
                .zip(&other.terms)
                .all(|((a, x), (b, y))| a.name == b.name && x == y)
    }
}

impl SymSize {
    pub(crate) fn constant(value: i64) -> SymSize {
        SymSize::linear_form(Vec::new(), value)
    }

    pub(crate) fn dim(dim: Rc<DimDecl>) -> SymSize {
        SymSize::linear_form(vec![(dim, 1)], 0)
    }

    fn linear_form(terms: Vec<(Rc<DimDecl>, i64)>, constant: i64) -> SymSize {
        SymSize {
            terms,
            constant,
            divisor: 1,
            scale: 1,
            offset: 0,
        }
    }

    /// The size as a number, when it does not depend on a `Dim`.
    pub(crate) fn as_constant(&self) -> Option<i64> {
        (self.terms.is_empty() && self.divisor == 1).then_some(self.constant)
    }

    /// The `Dim` the size is, when it is exactly one declared dimension.
    pub(crate) fn as_dim(&self) -> Option<&Rc<DimDecl>> {
        match self.terms.as_slice() {
            [(dim, 1)] if self.constant == 0 && self.divisor == 1 => Some(dim),
            _ => None,
        }
    }

    /// Whether the size depends on a declared dynamic dimension.
    pub(crate) fn is_dynamic(&self) -> bool {
        !self.terms.is_empty()
    }

    /// Whether it depends on a `Dim.AUTO` / `Dim.DYNAMIC`, whose range the exporter refines
    /// itself: no constraint on it fails.
    pub(crate) fn is_automatic(&self) -> bool {
        self.terms.iter().any(|(dim, _)| dim.automatic)
    }

    /// The `Dim`s the size depends on, in name order.
    pub(crate) fn dims(&self) -> impl Iterator<Item = &Rc<DimDecl>> {
        self.terms.iter().map(|(dim, _)| dim)
    }

    /// The linear part and the divisor: `Σ coefficient·dim + constant` and `d` in `(…) // d`
    /// (with a divisor above 1 the size is not linear, and may be scaled too).
    pub(crate) fn linear(&self) -> (&[(Rc<DimDecl>, i64)], i64, i64) {
        (&self.terms, self.constant, self.divisor)
    }

    fn normalised(mut self) -> Option<SymSize> {
        if self.divisor > 1 && self.scale > 1 {
            // `s·(q) + o` with `o = m·s + r` is `s·((inner + m·d) // d) + r`.
            let folded = self.offset.div_euclid(self.scale);
            self.constant = self
                .constant
                .checked_add(folded.checked_mul(self.divisor)?)?;
            self.offset = self.offset.rem_euclid(self.scale);
        }
        if self.divisor > 1 && self.scale == 1 && self.offset != 0 {
            self.constant = self
                .constant
                .checked_add(self.offset.checked_mul(self.divisor)?)?;
            self.offset = 0;
        }
        Some(self.reduced())
    }

    fn reduced(mut self) -> SymSize {
        self.terms.retain(|(_, coefficient)| *coefficient != 0);
        self.terms.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name));
        if self.divisor > 1 {
            let common = self
                .terms
                .iter()
                .fold(gcd(self.constant, self.divisor), |acc, (_, c)| gcd(acc, *c));
            if common > 1 {
                for (_, coefficient) in &mut self.terms {
                    *coefficient /= common;
                }
                self.constant /= common;
                self.divisor /= common;
            }
        }
        if self.divisor == 1 && (self.scale != 1 || self.offset != 0) {
            // Checked by the callers' ranges: model sizes are far from overflowing.
            for (_, coefficient) in &mut self.terms {
                *coefficient = coefficient.saturating_mul(self.scale);
            }
            self.constant = self
                .constant
                .saturating_mul(self.scale)
                .saturating_add(self.offset);
            (self.scale, self.offset) = (1, 0);
        }
        if self.terms.is_empty() && self.divisor > 1 {
            self.constant = self
                .constant
                .div_euclid(self.divisor)
                .saturating_mul(self.scale)
                .saturating_add(self.offset);
            (self.divisor, self.scale, self.offset) = (1, 1, 0);
        }
        self
    }

    /// `self + other`; `None` when both depend on `Dim`s and one is a floor division (not
    /// linear any more).
    pub(crate) fn add(&self, other: &SymSize) -> Option<SymSize> {
        let (this, that) = match (self.divisor, other.divisor) {
            (1, 1) => (self, other),
            // `s·(a // d) + o + c` for a constant `c`.
            (_, 1) if other.terms.is_empty() => {
                let mut sum = self.clone();
                sum.offset = sum.offset.checked_add(other.constant)?;
                return sum.normalised();
            }
            (1, _) if self.terms.is_empty() => return other.add(self),
            _ => return None,
        };
        let mut terms = this.terms.clone();
        for (dim, coefficient) in &that.terms {
            match terms.iter_mut().find(|(known, _)| known.name == dim.name) {
                Some((_, sum)) => *sum = sum.checked_add(*coefficient)?,
                None => terms.push((dim.clone(), *coefficient)),
            }
        }
        Some(SymSize::linear_form(terms, this.constant.checked_add(that.constant)?).reduced())
    }

    pub(crate) fn negate(&self) -> Option<SymSize> {
        if self.divisor != 1 {
            return None;
        }
        Some(SymSize::linear_form(
            self.terms
                .iter()
                .map(|(dim, coefficient)| Some((dim.clone(), coefficient.checked_neg()?)))
                .collect::<Option<_>>()?,
            self.constant.checked_neg()?,
        ))
    }

    pub(crate) fn sub(&self, other: &SymSize) -> Option<SymSize> {
        self.add(&other.negate()?)
    }

    /// `self * other`, when one side is a constant (a floor division by a positive one).
    pub(crate) fn mul(&self, other: &SymSize) -> Option<SymSize> {
        let (symbolic, factor) = match (self.as_constant(), other.as_constant()) {
            (_, Some(factor)) => (self, factor),
            (Some(factor), None) => (other, factor),
            (None, None) => return None,
        };
        if factor == 0 {
            return Some(SymSize::constant(0));
        }
        if symbolic.divisor != 1 {
            if factor < 0 {
                return None;
            }
            let mut scaled = symbolic.clone();
            scaled.scale = scaled.scale.checked_mul(factor)?;
            scaled.offset = scaled.offset.checked_mul(factor)?;
            return scaled.normalised();
        }
        Some(
            SymSize::linear_form(
                symbolic
                    .terms
                    .iter()
                    .map(|(dim, coefficient)| Some((dim.clone(), coefficient.checked_mul(factor)?)))
                    .collect::<Option<_>>()?,
                symbolic.constant.checked_mul(factor)?,
            )
            .reduced(),
        )
    }

    /// `self // other` for a positive constant `other`; `None` for a scaled division the
    /// constant does not divide (`3·(h // 2) // 2`).
    pub(crate) fn floor_div(&self, other: &SymSize) -> Option<SymSize> {
        let divisor = other.as_constant().filter(|divisor| *divisor > 0)?;
        if self.divisor == 1 || self.scale == 1 {
            // `(inner // d) // k` is `inner // (d·k)`.
            let mut divided = self.clone();
            divided.divisor = divided.divisor.checked_mul(divisor)?;
            return divided.normalised();
        }
        // `(s·q + o) // k` is `q // (k/s)` when `s` divides `k` (as `0 <= o < s`).
        if divisor % self.scale == 0 {
            let mut divided = self.clone();
            divided.divisor = divided.divisor.checked_mul(divisor / self.scale)?;
            (divided.scale, divided.offset) = (1, 0);
            return divided.normalised();
        }
        // `(s·q + o) // k` is `(s/k)·q + o // k` when `k` divides `s`.
        if self.scale % divisor != 0 {
            return None;
        }
        let mut divided = self.clone();
        divided.scale /= divisor;
        divided.offset = divided.offset.div_euclid(divisor);
        divided.normalised()
    }

    /// The sizes the exporter assumes it takes: every `Dim` in its assumed range (at least 2).
    /// `None` ends are unbounded.
    pub(crate) fn range(&self) -> (Option<i64>, Option<i64>) {
        let mut low = Some(self.constant);
        let mut high = Some(self.constant);
        for (dim, coefficient) in &self.terms {
            let dim_low = dim.low();
            let dim_high = dim.max;
            let (term_low, term_high) = if *coefficient > 0 {
                (
                    dim_low.checked_mul(*coefficient),
                    dim_high.and_then(|high| high.checked_mul(*coefficient)),
                )
            } else {
                (
                    dim_high.and_then(|high| high.checked_mul(*coefficient)),
                    dim_low.checked_mul(*coefficient),
                )
            };
            low = low.zip(term_low).and_then(|(a, b)| a.checked_add(b));
            high = high.zip(term_high).and_then(|(a, b)| a.checked_add(b));
        }
        let divide = |value: i64| {
            value
                .div_euclid(self.divisor)
                .saturating_mul(self.scale)
                .saturating_add(self.offset)
        };
        (low.map(divide), high.map(divide))
    }

    /// The value at the example's sizes of its `Dim`s.
    pub(crate) fn evaluate(&self, size_of: impl Fn(&DimDecl) -> Option<i64>) -> Option<i64> {
        let mut total = self.constant;
        for (dim, coefficient) in &self.terms {
            total = total.checked_add(size_of(dim)?.checked_mul(*coefficient)?)?;
        }
        total
            .div_euclid(self.divisor)
            .checked_mul(self.scale)?
            .checked_add(self.offset)
    }
}

impl fmt::Display for SymSize {
    /// As torch's suggestions write sizes: `dx + dy`, `32 - x_dim`, `2*batch`, `(dz + 1)//2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        let term = |coefficient: i64, name: &str| match coefficient.abs() {
            1 => name.to_owned(),
            k => format!("{k}*{name}"),
        };
        // A leading negative term reads better after the constant: `32 - x_dim`.
        let constant_first = self.terms.first().is_some_and(|(_, c)| *c < 0) && self.constant > 0;
        if constant_first {
            text.push_str(&self.constant.to_string());
        }
        for (dim, coefficient) in &self.terms {
            if text.is_empty() {
                if *coefficient < 0 {
                    text.push('-');
                }
            } else {
                text.push_str(if *coefficient < 0 { " - " } else { " + " });
            }
            text.push_str(&term(*coefficient, &dim.name));
        }
        if !constant_first && (self.constant != 0 || text.is_empty()) {
            if text.is_empty() {
                text.push_str(&self.constant.to_string());
            } else if self.constant < 0 {
                let _ = write!(text, " - {}", -self.constant);
            } else {
                let _ = write!(text, " + {}", self.constant);
            }
        }
        if self.divisor > 1 {
            if self.terms.len() > 1 || self.constant != 0 {
                text = format!("({text})");
            }
            let _ = write!(text, "//{}", self.divisor);
            if self.scale > 1 {
                text = format!("{}*({text})", self.scale);
            }
            if self.offset != 0 {
                let _ = write!(text, " + {}", self.offset);
            }
        }
        f.write_str(&text)
    }
}

/// What the exporter makes of `left == right`, when it fails export: the constraint the user's
/// `dynamic_shapes` must state instead.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Relation {
    /// One `Dim` is solved to a number: the dimension is static.
    Constant { dim: Rc<DimDecl>, value: i64 },
    /// Two `Dim`s are related: `dim = expr` over `root` (`y_dim = 32 - x_dim`), with the
    /// narrower range `root` needs for `dim` to stay in its own (`x_dim <= 30`), if any.
    Derived {
        dim: Rc<DimDecl>,
        expr: SymSize,
        root: Rc<DimDecl>,
        root_range: Option<(i64, Option<i64>)>,
    },
    /// More `Dim`s than the exporter relates (it checks the sum at run time), whose ranges must
    /// narrow for the sum to be reachable: `(dim, min, max)`.
    Ranges(Vec<(Rc<DimDecl>, i64, Option<i64>)>),
}

/// `left == right` over one `Dim` through floor divisions, when it holds for some sizes only
/// and which ones depends on the size modulo a period: `2*(h//2) == h` after a stride-2 down-
/// and upsampling holds for even `h`, `2*(h//4) == h//2` two levels down for `h % 4` in
/// `{0, 1}`. The exporter guards it; the `Dim`, period and the remainders where it holds.
/// Found by evaluating both sides over the declared range, exact for the periods that range
/// covers twice.
pub(crate) fn periodic_relation(
    left: &SymSize,
    right: &SymSize,
) -> Option<(Rc<DimDecl>, i64, Vec<i64>)> {
    const SAMPLES: i64 = 256;
    const LONGEST_PERIOD: i64 = 64;
    let dim = left
        .terms
        .first()
        .or_else(|| right.terms.first())
        .map(|(dim, _)| dim)?;
    let single = |size: &SymSize| {
        size.terms.is_empty() || (size.terms.len() == 1 && size.terms[0].0.name == dim.name)
    };
    if !single(left) || !single(right) || (left.divisor == 1 && right.divisor == 1) {
        return None;
    }
    let (low, high) = declared_range(dim);
    let high = high.map_or(low + SAMPLES, |high| high.min(low + SAMPLES));
    let equal: Vec<(i64, bool)> = (low..=high)
        .map(|value| {
            let at = |size: &SymSize| size.evaluate(|_| Some(value));
            Some((value, at(left)? == at(right)?))
        })
        .collect::<Option<_>>()?;
    if equal.iter().all(|(_, equal)| *equal) || !equal.iter().any(|(_, equal)| *equal) {
        return None;
    }
    let span = high - low + 1;
    (2..=LONGEST_PERIOD.min(span / 2)).find_map(|period| {
        let mut holds: Vec<Option<bool>> = vec![None; usize::try_from(period).ok()?];
        for (value, equal) in &equal {
            let slot = &mut holds[usize::try_from(value.rem_euclid(period)).ok()?];
            match slot {
                Some(seen) if seen != equal => return None,
                _ => *slot = Some(*equal),
            }
        }
        let remainders = (0..period)
            .filter(|remainder| {
                holds[usize::try_from(*remainder).unwrap_or_default()] == Some(true)
            })
            .collect();
        Some((dim.clone(), period, remainders))
    })
}

/// The range the exporter assumes for a `Dim`.
fn declared_range(dim: &DimDecl) -> (i64, Option<i64>) {
    (dim.low(), dim.max)
}

/// The constraint `left == right` puts on the `Dim`s, as torch's solver states it, or `None`
/// when it holds, is not linear (a runtime assertion), or needs nothing of the declaration.
pub(crate) fn relation(left: &SymSize, right: &SymSize) -> Option<Relation> {
    if left.divisor != 1 || right.divisor != 1 {
        return None;
    }
    let difference = left.sub(right)?;
    match difference.terms.as_slice() {
        [] => None,
        [(dim, coefficient)] => {
            let value = -difference.constant;
            (value % coefficient == 0 && value / coefficient >= 0).then(|| Relation::Constant {
                dim: dim.clone(),
                value: value / coefficient,
            })
        }
        [first, second] => {
            // Solve for the `Dim` declared later, as torch solves for the later symbol, when its
            // coefficient allows an integer expression.
            let (later, earlier) = if second.0.range.start() >= first.0.range.start() {
                (second, first)
            } else {
                (first, second)
            };
            let (target, root) = if later.1.abs() == 1 {
                (later, earlier)
            } else if earlier.1.abs() == 1 {
                (earlier, later)
            } else {
                return None;
            };
            // `c·target + r·root + k = 0` → `target = -(r·root + k)/c`.
            let rest = SymSize::linear_form(vec![root.clone()], difference.constant);
            let expr = if target.1 == 1 { rest.negate()? } else { rest };
            let root_range = narrowed_root(&root.0, &expr, &target.0);
            Some(Relation::Derived {
                dim: target.0.clone(),
                expr,
                root: root.0.clone(),
                root_range,
            })
        }
        terms => {
            // Measured: torch narrows the ranges of a sum of `Dim`s equal to a number
            // (`dx + dy + dz == 32` gives each `max=28`) and checks any other relation of
            // three or more at run time (`dx + dy == dz` exports).
            let positive = terms.iter().all(|(_, coefficient)| *coefficient > 0);
            let negative = terms.iter().all(|(_, coefficient)| *coefficient < 0);
            let bounded =
                (positive && difference.constant < 0) || (negative && difference.constant > 0);
            if !bounded {
                return None;
            }
            let mut ranges = Vec::new();
            for (dim, coefficient) in terms {
                // `c·dim = -(rest)`: the rest's range bounds `dim`.
                let rest = difference
                    .sub(&SymSize::dim(dim.clone()).mul(&SymSize::constant(*coefficient))?)?;
                let (rest_low, rest_high) = rest.negate()?.range();
                let (low, high) = if *coefficient > 0 {
                    (
                        rest_low.map(|low| ceil_div(low, *coefficient)),
                        rest_high.map(|high| high.div_euclid(*coefficient)),
                    )
                } else {
                    (
                        rest_high.map(|high| ceil_div(high, *coefficient)),
                        rest_low.map(|low| low.div_euclid(*coefficient)),
                    )
                };
                let (declared_low, declared_high) = declared_range(dim);
                let new_low = low.map_or(declared_low, |low| low.max(declared_low));
                let new_high = match (high, declared_high) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                if new_low != declared_low || new_high != declared_high {
                    ranges.push((dim.clone(), new_low, new_high));
                }
            }
            (!ranges.is_empty()).then_some(Relation::Ranges(ranges))
        }
    }
}

/// The range of `root` for which `target = expr(root)` stays in `target`'s declared range, when
/// it is narrower than `root`'s own.
fn narrowed_root(root: &DimDecl, expr: &SymSize, target: &DimDecl) -> Option<(i64, Option<i64>)> {
    let [(_, a)] = expr.terms.as_slice() else {
        return None;
    };
    let (a, b) = (*a, expr.constant);
    let (target_low, target_high) = declared_range(target);
    let (root_low, root_high) = declared_range(root);
    // `a·r + b >= target_low` and `a·r + b <= target_high`.
    let (mut low, mut high) = (root_low, root_high);
    let tighten_low = |low: &mut i64, bound: i64| *low = (*low).max(bound);
    let tighten_high = |high: &mut Option<i64>, bound: i64| {
        *high = Some(high.map_or(bound, |high| high.min(bound)));
    };
    if a > 0 {
        tighten_low(&mut low, ceil_div(target_low - b, a));
        if let Some(target_high) = target_high {
            tighten_high(&mut high, (target_high - b).div_euclid(a));
        }
    } else {
        tighten_high(&mut high, (target_low - b).div_euclid(a));
        if let Some(target_high) = target_high {
            tighten_low(&mut low, ceil_div(target_high - b, a));
        }
    }
    (low != root_low || high != root_high).then_some((low, high))
}

/// `⌈a / b⌉` for integers.
fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

/// The smallest size of `dim`, from its declared minimum, at which `size` (over `dim` alone) is
/// at least 2: the minimum that keeps a broadcast size from being 1.
pub(crate) fn min_above_one(size: &SymSize) -> Option<(Rc<DimDecl>, i64)> {
    min_reaching(size, 2)
}

/// The smallest value in the declared range of `size`'s one `Dim` (looking 1,024 past its
/// minimum) at which `size` is at least `target`, with that `Dim`.
pub(crate) fn min_reaching(size: &SymSize, target: i64) -> Option<(Rc<DimDecl>, i64)> {
    let [(dim, _)] = size.terms.as_slice() else {
        return None;
    };
    let (low, high) = declared_range(dim);
    (low..low + 1024)
        .take_while(|value| high.is_none_or(|high| *value <= high))
        .find(|value| {
            size.evaluate(|_| Some(*value))
                .is_some_and(|size| size >= target)
        })
        .map(|value| (dim.clone(), value))
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_text_size::TextRange;

    fn dim(name: &str, min: Option<i64>, max: Option<i64>) -> SymSize {
        SymSize::dim(Rc::new(DimDecl {
            name: name.to_owned(),
            min,
            max,
            bounds_unknown: false,
            automatic: false,
            unbacked: false,
            range: TextRange::default(),
            derived: false,
        }))
    }

    #[test]
    fn arithmetic_keeps_the_users_names() {
        let (dx, dy) = (dim("dx", None, None), dim("dy", None, None));
        let sum = dx.add(&dy).unwrap();
        assert_eq!(sum.to_string(), "dx + dy");
        let thirty_two = SymSize::constant(32);
        assert_eq!(thirty_two.sub(&dx).unwrap().to_string(), "32 - dx");
        let dz = dim("dz", None, None);
        let strided = dz
            .add(&SymSize::constant(1))
            .unwrap()
            .floor_div(&SymSize::constant(2))
            .unwrap();
        assert_eq!(strided.to_string(), "(dz + 1)//2");
        assert_eq!(strided.range(), (Some(1), None));
        let doubled = dz.mul(&SymSize::constant(4)).unwrap();
        assert_eq!(doubled.to_string(), "4*dz");
        // `4*dz // 2` folds to `2*dz`; `dx - dx` is the constant 0.
        assert_eq!(
            doubled
                .floor_div(&SymSize::constant(2))
                .unwrap()
                .to_string(),
            "2*dz"
        );
        assert_eq!(dx.sub(&dx).unwrap().as_constant(), Some(0));
        assert!(dx.mul(&dy).is_none());
    }

    #[test]
    fn relations_as_torch_states_them() {
        let later = |name: &str, min, max, at: u32| {
            SymSize::dim(Rc::new(DimDecl {
                name: name.to_owned(),
                min,
                max,
                bounds_unknown: false,
                automatic: false,
                unbacked: false,
                range: TextRange::new(at.into(), at.into()),
                derived: false,
            }))
        };
        let (x, y) = (
            later("x_dim", Some(1), Some(31), 0),
            later("y_dim", Some(1), Some(31), 10),
        );
        // `torch.cat([x, y], 1)` into `Linear(32, ...)`: `y_dim = 32 - x_dim`, `x_dim <= 30`.
        let Some(Relation::Derived {
            dim,
            expr,
            root,
            root_range,
        }) = relation(&x.add(&y).unwrap(), &SymSize::constant(32))
        else {
            panic!("a derived dim")
        };
        assert_eq!(
            (
                dim.name.as_str(),
                expr.to_string().as_str(),
                root.name.as_str()
            ),
            ("y_dim", "32 - x_dim", "x_dim")
        );
        assert_eq!(root_range, Some((2, Some(30))));
        // `torch.cat([x, x]) + y`: `dy = 2*dx`; `x + y[:, 1:]`: `dy = dx + 1`.
        let (dx, dy) = (later("dx", None, None, 0), later("dy", None, None, 10));
        let Some(Relation::Derived {
            expr, root_range, ..
        }) = relation(&dx.mul(&SymSize::constant(2)).unwrap(), &dy)
        else {
            panic!("a derived dim")
        };
        assert_eq!((expr.to_string(), root_range), ("2*dx".to_owned(), None));
        let Some(Relation::Derived { expr, .. }) =
            relation(&dx, &dy.sub(&SymSize::constant(1)).unwrap())
        else {
            panic!("a derived dim")
        };
        assert_eq!(expr.to_string(), "dx + 1");
        // Three `Dim`s summing to 32: each at most 28. Summing to a fourth: nothing to declare.
        let dz = later("dz", None, None, 20);
        let sum = dx.add(&dy).unwrap().add(&dz).unwrap();
        let Some(Relation::Ranges(ranges)) = relation(&sum, &SymSize::constant(32)) else {
            panic!("ranges")
        };
        assert!(
            ranges
                .iter()
                .all(|(_, low, high)| (*low, *high) == (2, Some(28)))
        );
        assert_eq!(relation(&dx.add(&dy).unwrap(), &dz), None);
        // One `Dim` against a number: a constant.
        assert!(matches!(
            relation(&dx, &SymSize::constant(32)),
            Some(Relation::Constant { value: 32, .. })
        ));
        // `(dz + 1)//2` is 1 at dz = 2: the minimum that keeps it above 1 is 3.
        let strided = dz
            .add(&SymSize::constant(1))
            .unwrap()
            .floor_div(&SymSize::constant(2))
            .unwrap();
        assert_eq!(min_above_one(&strided).map(|(_, min)| min), Some(3));
        assert_eq!(relation(&strided, &dx), None);
    }

    #[test]
    fn a_downsampling_undone_by_an_upsampling_needs_a_multiple() {
        let height = dim("height", None, None);
        let constant = SymSize::constant;
        // MaxPool2d(2): (h - 2)//2 + 1 is h//2; ConvTranspose2d(k=2, s=2): (h//2 - 1)·2 + 2.
        let pooled = height
            .sub(&constant(2))
            .unwrap()
            .floor_div(&constant(2))
            .unwrap()
            .add(&constant(1))
            .unwrap();
        assert_eq!(pooled.to_string(), "height//2");
        let upsampled = pooled
            .sub(&constant(1))
            .unwrap()
            .mul(&constant(2))
            .unwrap()
            .add(&constant(2))
            .unwrap();
        assert_eq!(upsampled.to_string(), "2*(height//2)");
        assert_eq!(upsampled.evaluate(|_| Some(7)), Some(6));
        assert_eq!(upsampled.range(), (Some(2), None));
        let Some((dim, period, remainders)) = periodic_relation(&upsampled, &height) else {
            panic!("a multiple")
        };
        assert_eq!(
            (dim.name.as_str(), period, remainders),
            ("height", 2, vec![0])
        );
        // Twice down and up: a multiple of 4; `3*(h//2) // 2` is not followed.
        let twice = upsampled
            .floor_div(&constant(4))
            .unwrap()
            .mul(&constant(4))
            .unwrap();
        assert_eq!(twice.to_string(), "4*(height//4)");
        assert_eq!(
            periodic_relation(&twice, &height).map(|(_, period, remainders)| (period, remainders)),
            Some((4, vec![0]))
        );
        // Two levels down, one up, against the first level: `h % 4` in {0, 1}.
        let quarter_up = height
            .floor_div(&constant(4))
            .unwrap()
            .mul(&constant(2))
            .unwrap();
        assert_eq!(
            periodic_relation(&quarter_up, &pooled)
                .map(|(_, period, remainders)| (period, remainders)),
            Some((4, vec![0, 1]))
        );
        assert!(
            pooled
                .mul(&constant(3))
                .unwrap()
                .floor_div(&constant(2))
                .is_none()
        );
        // An odd size kept by `2*(h//2) + 1`.
        let odd = upsampled.add(&constant(1)).unwrap();
        assert_eq!(odd.to_string(), "2*(height//2) + 1");
        assert_eq!(
            periodic_relation(&odd, &height).map(|(_, period, remainders)| (period, remainders)),
            Some((2, vec![1]))
        );
        assert_eq!(periodic_relation(&height, &height), None);
    }

    #[test]
    fn ranges_follow_the_declared_bounds() {
        let x = dim("x", Some(1), Some(31));
        let y = dim("y", None, Some(10));
        assert_eq!(x.range(), (Some(2), Some(31)));
        assert_eq!(x.add(&y).unwrap().range(), (Some(4), Some(41)));
        assert_eq!(
            SymSize::constant(32).sub(&x).unwrap().range(),
            (Some(1), Some(30))
        );
    }
}

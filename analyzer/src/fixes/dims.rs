//! Dimension constraint fixes: edits of `dynamic_shapes` and the `Dim`s it uses that carry out
//! a constraint, as torch's `Suggested fixes:` spell them (`batch = Dim('batch', max=16)`,
//! `b = a`, `_l = Dim('_l', min=1)` with `l = 2*_l`, `batch = 8`).
//!
//! The builder is general over how a file writes its spec: module-level `n = Dim("n")`
//! variables, `a, b = dims("a", "b")`, `Dim("n")` written inline in the spec, specs bound to a
//! name or passed as `dynamic_shapes=` to an export call in any scope, dictionary and tuple
//! forms, nested per-input containers. A dim is known by its *torch name* (the string given to
//! `Dim`), which is what torch's suggestions name, not by the variable that holds it.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::syntax::ast::visitor::{self, Visitor};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::{import_member, indentation_at, line_end, line_start};
use crate::SourceFile;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::names;
use crate::syntax::ast::{self, Expr, Stmt};

/// One constraint on a `Dim`, by the dim's name (the string passed to `Dim`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DimConstraint {
    /// The dim's range: `Dim("n", min=.., max=..)`. A name no definition in the file carries is
    /// a new root that a [`DimConstraint::Derived`] refers to (`_l` in `l = 2*_l`).
    Range {
        name: String,
        min: Option<i64>,
        max: Option<i64>,
    },
    /// The dim is the same as another: `b = a`.
    Equal { name: String, to: String },
    /// The dim is an expression of another: `l = 2*_l`, `b = a + 1`.
    Derived { name: String, expr: String },
    /// The code fixes the dim to one size: it must be static.
    Constant { name: String, value: i64 },
    /// The dim is `Dim.AUTO`: the exporter derives its range and its relations to other dims
    /// (`y = 32 - x`, which no `Dim` expression can declare).
    Automatic { name: String },
}

impl DimConstraint {
    pub(crate) fn name(&self) -> &str {
        match self {
            DimConstraint::Range { name, .. }
            | DimConstraint::Equal { name, .. }
            | DimConstraint::Derived { name, .. }
            | DimConstraint::Constant { name, .. }
            | DimConstraint::Automatic { name } => name,
        }
    }

    /// The constraint as torch's suggestion spells it, for the fix's title.
    fn describe(&self) -> String {
        match self {
            DimConstraint::Range { name, min, max } => {
                format!("{name} = Dim(\"{name}\"{})", bounds_text(*min, *max))
            }
            DimConstraint::Equal { name, to } => format!("{name} = {to}"),
            DimConstraint::Derived { name, expr } => format!("{name} = {expr}"),
            DimConstraint::Constant { name, value } => format!(
                "{name} = {value}, which removes the `Dim` you declared: the exported program accepts size {value} only"
            ),
            DimConstraint::Automatic { name } => format!("{name} = Dim.AUTO"),
        }
    }
}

fn bounds_text(min: Option<i64>, max: Option<i64>) -> String {
    let min = min.map(|min| format!(", min={min}")).unwrap_or_default();
    let max = max.map(|max| format!(", max={max}")).unwrap_or_default();
    format!("{min}{max}")
}

/// The fix that applies `constraints` to the file's `dynamic_shapes`, or `None` when one of
/// them names a dim the file does not define in a form the builder can edit: a partial fix
/// would not make the export pass.
pub(crate) fn constraint_fix(
    body: &[Stmt],
    file: SourceFile<'_>,
    constraints: &[DimConstraint],
    applicability: Applicability,
) -> Option<Fix> {
    constraint_fix_of(body, file, None, constraints, applicability)
}

/// [`constraint_fix`] of the spec bound to module-level name `binding` (`DYNAMIC_SHAPES`, which
/// an export call in another file passes), or of the file's own spec when `binding` is `None`.
pub(crate) fn constraint_fix_of(
    body: &[Stmt],
    file: SourceFile<'_>,
    binding: Option<&str>,
    constraints: &[DimConstraint],
    applicability: Applicability,
) -> Option<Fix> {
    if constraints.is_empty() {
        return None;
    }
    let mut gatherer = Gatherer::default();
    gatherer.visit_body(body);
    let mut roots = match binding {
        Some(name) => bound_spec(body, name),
        None => spec_roots(body, &gatherer),
    };
    let mut spec = Spec {
        text: file.text,
        gathered: &gatherer,
        dims: BTreeMap::new(),
        slots: Vec::new(),
        visited: HashSet::new(),
    };
    if roots.is_empty() {
        // A file that only declares `Dim`s (`BATCH = Dim("batch")` in `pkg/dims.py`, used by
        // a spec elsewhere): their ranges can be edited here; equalities, derived and static
        // dimensions change the spec, which is not here.
        if !constraints
            .iter()
            .all(|constraint| matches!(constraint, DimConstraint::Range { .. }))
        {
            return None;
        }
        roots = declared_dims(body);
        if roots.is_empty() {
            return None;
        }
    }
    for (expr, stmt) in roots {
        spec.walk(expr, stmt, SlotContext::Top, 0);
    }
    let edits = Planner::new(body, file, &spec, &gatherer).edits(constraints)?;
    // A constant turns a dimension the user declared dynamic into a static one: the title
    // says so first, so that nobody takes it for a range.
    let verb = if constraints
        .iter()
        .any(|constraint| matches!(constraint, DimConstraint::Constant { .. }))
    {
        "Make a dynamic dimension static"
    } else if constraints
        .iter()
        .any(|constraint| matches!(constraint, DimConstraint::Automatic { .. }))
    {
        // The user's bounds go: the exporter decides the ranges the code allows.
        "Let the exporter derive the dimensions, dropping their declared bounds"
    } else {
        "Constrain `dynamic_shapes`"
    };
    let title = format!(
        "{verb}: {}",
        constraints
            .iter()
            .map(DimConstraint::describe)
            .collect::<Vec<_>>()
            .join("; ")
    );
    Some(Fix {
        title,
        edits,
        applicability,
    })
}

// -------------------------------------------------------------------------------------------
// Reading the file

/// What the file binds, gathered in one walk over every scope.
#[derive(Default)]
struct Gatherer<'a> {
    /// `name = value` with one name target, in any scope; the last one wins.
    assignments: HashMap<&'a str, &'a ast::StmtAssign>,
    /// `a, b = dims("a", "b")`: the variable, its statement and the dim's name.
    helpers: HashMap<&'a str, (&'a ast::StmtAssign, &'a str)>,
    /// `dynamic_shapes=` arguments, with the innermost statement holding them.
    keywords: Vec<(&'a Expr, TextRange)>,
    /// Every name the file uses or binds, so that a new variable takes a free one.
    identifiers: HashSet<&'a str>,
    /// Every read of a name, to tell whether a definition is still used.
    loads: Vec<(&'a str, TextRange)>,
    statements: Vec<TextRange>,
}

impl<'a> Visitor<'a> for Gatherer<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) => match assign.targets.as_slice() {
                [Expr::Name(name)] => {
                    // The later binding wins: `seq = Dim("seq", max=8)` after `dims(...)`.
                    self.helpers.remove(name.id.as_str());
                    self.assignments.insert(name.id.as_str(), assign);
                }
                [Expr::Tuple(tuple)] => {
                    if let Expr::Call(call) = &*assign.value {
                        let callee = names::dotted(&call.func).unwrap_or_default();
                        if callee.rsplit('.').next() == Some("dims") {
                            for (target, arg) in tuple.elts.iter().zip(&call.arguments.args) {
                                if let (Expr::Name(name), Some(dim)) =
                                    (target, names::string_literal(arg))
                                {
                                    self.assignments.remove(name.id.as_str());
                                    self.helpers.insert(name.id.as_str(), (assign, dim));
                                }
                            }
                        }
                    }
                }
                _ => {}
            },
            Stmt::FunctionDef(def) => {
                self.identifiers.insert(def.name.as_str());
            }
            Stmt::ClassDef(def) => {
                self.identifiers.insert(def.name.as_str());
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    self.identifiers
                        .insert(bound.id.split('.').next().unwrap_or_default());
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    self.identifiers
                        .insert(alias.asname.as_ref().unwrap_or(&alias.name).id.as_str());
                }
            }
            _ => {}
        }
        self.statements.push(stmt.range());
        visitor::walk_stmt(self, stmt);
        self.statements.pop();
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => {
                self.identifiers.insert(name.id.as_str());
                if name.ctx.is_load() {
                    self.loads.push((name.id.as_str(), name.range));
                }
            }
            Expr::Call(call) => {
                if let (Some(keyword), Some(stmt)) = (
                    call.arguments.find_keyword("dynamic_shapes"),
                    self.statements.last(),
                ) {
                    self.keywords.push((&keyword.value, *stmt));
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// The spec expressions: module-level `dynamic_shapes = ...` and `dynamic_shapes=` arguments,
/// each with the statement it is written in.
fn spec_roots<'a>(body: &'a [Stmt], gathered: &Gatherer<'a>) -> Vec<(&'a Expr, TextRange)> {
    let mut roots: Vec<(&'a Expr, TextRange)> = names::module_level_statements(body)
        .into_iter()
        .filter_map(|stmt| match stmt {
            Stmt::Assign(assign) => match assign.targets.as_slice() {
                [Expr::Name(name)] if name.id.as_str() == "dynamic_shapes" => {
                    Some((&*assign.value, assign.range))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    roots.extend(gathered.keywords.iter().copied());
    roots
}

/// The module-level assignment of `name`, a spec another file's export call passes.
fn bound_spec<'a>(body: &'a [Stmt], name: &str) -> Vec<(&'a Expr, TextRange)> {
    names::module_level_statements(body)
        .into_iter()
        .rev()
        .find_map(|stmt| match stmt {
            Stmt::Assign(assign) => match assign.targets.as_slice() {
                [Expr::Name(target)] if target.id.as_str() == name => {
                    Some((&*assign.value, assign.range))
                }
                _ => None,
            },
            _ => None,
        })
        .into_iter()
        .collect()
}

/// The module-level `NAME = Dim(...)` assignments of a file with no spec, each as its target
/// name (which the walk resolves to the assignment, a variable site) and its statement.
fn declared_dims(body: &[Stmt]) -> Vec<(&Expr, TextRange)> {
    names::module_level_statements(body)
        .into_iter()
        .filter_map(|stmt| match stmt {
            Stmt::Assign(assign) => match (assign.targets.as_slice(), &*assign.value) {
                ([target @ Expr::Name(_)], Expr::Call(call))
                    if names::dotted(&call.func)
                        .is_some_and(|callee| callee.rsplit('.').next() == Some("Dim")) =>
                {
                    Some((target, assign.range))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Where a dim appears in the spec, so that making it static can remove it.
#[derive(Debug, Clone, Copy)]
enum SlotContext<'a> {
    /// A value of a `{index: dim}` dictionary: removing it removes the entry.
    DictValue(&'a ast::ExprDict, usize),
    /// An element of a tuple or list: it becomes `Dim.STATIC`.
    Element,
    /// The whole spec or a whole input's entry.
    Top,
}

/// One dimension entry of the spec: a `Dim` variable, an inline `Dim(...)`, a derived `2 * n`.
struct Slot<'a> {
    expr: &'a Expr,
    context: SlotContext<'a>,
    /// The dims (by torch name) the entry depends on.
    dims: Vec<&'a str>,
}

/// Where one dim (by torch name) is defined.
#[derive(Default)]
struct DimSites<'a> {
    /// `var = Dim("n", ...)`.
    variable: Option<(&'a str, &'a ast::StmtAssign, &'a ast::ExprCall)>,
    /// `var, ... = dims("n", ...)`.
    helper: Option<(&'a str, &'a ast::StmtAssign)>,
    /// `Dim("n", ...)` written in the spec itself.
    inline: Vec<&'a ast::ExprCall>,
    /// The statements holding the spec entries that use it.
    spec_statements: Vec<TextRange>,
}

struct Spec<'g, 'a> {
    text: &'a str,
    gathered: &'g Gatherer<'a>,
    dims: BTreeMap<&'a str, DimSites<'a>>,
    slots: Vec<Slot<'a>>,
    visited: HashSet<TextRange>,
}

fn is_dim_callee(func: &Expr) -> bool {
    names::dotted(func).is_some_and(|callee| callee == "Dim" || callee.ends_with(".Dim"))
}

impl<'a> Spec<'_, 'a> {
    fn walk(&mut self, expr: &'a Expr, stmt: TextRange, context: SlotContext<'a>, depth: usize) {
        if depth > 16 {
            return;
        }
        match expr {
            Expr::Dict(dict) => {
                if !self.visited.insert(dict.range) {
                    return;
                }
                for (index, item) in dict.items.iter().enumerate() {
                    if item.key.is_some() {
                        self.walk(
                            &item.value,
                            stmt,
                            SlotContext::DictValue(dict, index),
                            depth + 1,
                        );
                    }
                }
            }
            Expr::Tuple(ast::ExprTuple { elts, range, .. })
            | Expr::List(ast::ExprList { elts, range, .. }) => {
                if !self.visited.insert(*range) {
                    return;
                }
                for element in elts {
                    self.walk(element, stmt, SlotContext::Element, depth + 1);
                }
            }
            Expr::Name(name) => {
                if let Some(assign) = self.gathered.assignments.get(name.id.as_str()) {
                    if matches!(
                        &*assign.value,
                        Expr::Dict(_) | Expr::Tuple(_) | Expr::List(_)
                    ) {
                        self.walk(&assign.value, assign.range, SlotContext::Top, depth + 1);
                        return;
                    }
                }
                self.leaf(expr, stmt, context);
            }
            Expr::Call(_) | Expr::BinOp(_) => self.leaf(expr, stmt, context),
            _ => {}
        }
    }

    fn leaf(&mut self, expr: &'a Expr, stmt: TextRange, context: SlotContext<'a>) {
        let mut dims = Vec::new();
        self.dims_of(expr, &mut dims, 0);
        if dims.is_empty() {
            return;
        }
        for dim in &dims {
            self.dims.entry(dim).or_default().spec_statements.push(stmt);
        }
        self.slots.push(Slot {
            expr,
            context,
            dims,
        });
    }

    /// The dims an entry refers to, recording where each is defined.
    fn dims_of(&mut self, expr: &'a Expr, out: &mut Vec<&'a str>, depth: usize) {
        if depth > 8 {
            return;
        }
        match expr {
            Expr::Call(call) if is_dim_callee(&call.func) => {
                if let Some(name) = call.arguments.args.first().and_then(names::string_literal) {
                    let sites = self.dims.entry(name).or_default();
                    if !sites
                        .inline
                        .iter()
                        .any(|known| known.range() == call.range())
                    {
                        sites.inline.push(call);
                    }
                    out.push(name);
                }
            }
            Expr::Name(variable) => {
                let variable = variable.id.as_str();
                if let Some((assign, name)) = self.gathered.helpers.get(variable) {
                    self.dims.entry(name).or_default().helper = Some((variable, assign));
                    out.push(name);
                } else if let Some(assign) = self.gathered.assignments.get(variable) {
                    match &*assign.value {
                        Expr::Call(call) if is_dim_callee(&call.func) => {
                            if let Some(name) =
                                call.arguments.args.first().and_then(names::string_literal)
                            {
                                self.dims.entry(name).or_default().variable =
                                    Some((variable, assign, call));
                                out.push(name);
                            }
                        }
                        Expr::BinOp(_) | Expr::Name(_) => {
                            self.dims_of(&assign.value, out, depth + 1);
                        }
                        _ => {}
                    }
                }
            }
            Expr::BinOp(binary) => {
                self.dims_of(&binary.left, out, depth + 1);
                self.dims_of(&binary.right, out, depth + 1);
            }
            _ => {}
        }
    }

    fn slice(&self, ranged: impl Ranged) -> &'a str {
        &self.text[ranged.range()]
    }
}

// -------------------------------------------------------------------------------------------
// Writing the edits

/// What becomes of one dim.
#[derive(Debug, Clone)]
enum Plan {
    Range {
        min: Option<i64>,
        max: Option<i64>,
    },
    /// An expression over other dims' names (`a`, `2*_l`).
    Alias(String),
    Static,
    Automatic,
}

struct Planner<'p, 'g, 'a> {
    body: &'a [Stmt],
    file: SourceFile<'a>,
    spec: &'p Spec<'g, 'a>,
    gathered: &'g Gatherer<'a>,
    plans: BTreeMap<String, Plan>,
    /// Dims that get a new module variable: new roots and inline dims another dim refers to.
    new_variables: BTreeMap<String, String>,
    taken: HashSet<String>,
    edits: Vec<Edit>,
    /// Text inserted before the spec, keyed by variable, in order of creation.
    definitions: Vec<String>,
    dim_name: Option<String>,
    import_edit: Option<Edit>,
}

impl<'p, 'g, 'a> Planner<'p, 'g, 'a> {
    fn new(
        body: &'a [Stmt],
        file: SourceFile<'a>,
        spec: &'p Spec<'g, 'a>,
        gathered: &'g Gatherer<'a>,
    ) -> Self {
        Self {
            body,
            file,
            spec,
            gathered,
            plans: BTreeMap::new(),
            new_variables: BTreeMap::new(),
            taken: gathered
                .identifiers
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
            edits: Vec::new(),
            definitions: Vec::new(),
            dim_name: None,
            import_edit: None,
        }
    }

    /// How this file names `torch.export.Dim`, adding the import on first use.
    fn dim_name(&mut self) -> String {
        if let Some(name) = &self.dim_name {
            return name.clone();
        }
        let imported = import_member(self.body, self.file, "torch.export", "Dim");
        self.import_edit = imported.edit;
        self.dim_name = Some(imported.name.clone());
        imported.name
    }

    fn fresh_identifier(&mut self, name: &str) -> String {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let base = if valid {
            name.to_owned()
        } else {
            "dim".to_owned()
        };
        let mut candidate = base.clone();
        let mut counter = 1;
        while self.taken.contains(&candidate) {
            candidate = if counter == 1 {
                format!("{base}_dim")
            } else {
                format!("{base}_dim{counter}")
            };
            counter += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }

    fn edits(mut self, constraints: &[DimConstraint]) -> Option<Vec<Edit>> {
        for constraint in constraints {
            let plan = match constraint {
                DimConstraint::Range { min, max, .. } => Plan::Range {
                    min: *min,
                    max: *max,
                },
                DimConstraint::Equal { to, .. } => Plan::Alias(to.clone()),
                DimConstraint::Derived { expr, .. } => Plan::Alias(expr.clone()),
                DimConstraint::Constant { .. } => Plan::Static,
                DimConstraint::Automatic { .. } => Plan::Automatic,
            };
            self.plans.insert(constraint.name().to_owned(), plan);
        }
        // Names an alias refers to need a variable to be referred to by.
        let referenced: Vec<String> = self
            .plans
            .values()
            .filter_map(|plan| match plan {
                Plan::Alias(expr) => Some(identifiers(expr)),
                _ => None,
            })
            .flatten()
            .collect();
        for name in &referenced {
            let sites = self.spec.dims.get(name.as_str());
            let has_variable = sites.is_some_and(|s| s.variable.is_some() || s.helper.is_some());
            if !has_variable && !self.new_variables.contains_key(name) {
                let is_new_root = sites.is_none();
                if is_new_root && !matches!(self.plans.get(name), Some(Plan::Range { .. })) {
                    return None;
                }
                let variable = self.fresh_identifier(name);
                self.new_variables.insert(name.clone(), variable);
            }
        }
        let plans: Vec<(String, Plan)> = self.plans.clone().into_iter().collect();
        // New variables are defined first, before every statement that will refer to them.
        for (name, variable) in self.new_variables.clone() {
            let plan = self.plans.get(&name).cloned();
            let text = match (self.spec.dims.get(name.as_str()), plan.as_ref()) {
                (None, Some(Plan::Range { min, max })) => {
                    format!("{}(\"{name}\"{})", self.dim_name(), bounds_text(*min, *max))
                }
                (Some(sites), plan) => {
                    let call = sites.inline.first()?;
                    let text = match plan {
                        Some(Plan::Range { min, max }) => self.rewritten_call(call, *min, *max),
                        None => self.spec.slice(call).to_owned(),
                        // An inline dim that is both aliased and referred to: not spelled by torch.
                        Some(_) => return None,
                    };
                    for inline in &sites.inline {
                        self.edits.push(Edit {
                            range: inline.range(),
                            content: variable.clone(),
                        });
                    }
                    text
                }
                (None, _) => return None,
            };
            self.definitions.push(format!("{variable} = {text}"));
        }
        for (name, plan) in &plans {
            if self.new_variables.contains_key(name) && !self.spec.dims.contains_key(name.as_str())
            {
                continue; // A new root, defined above.
            }
            let sites = self.spec.dims.get(name.as_str())?;
            match plan {
                Plan::Range { min, max } => self.range(name, sites, *min, *max)?,
                Plan::Alias(expr) => self.alias(name, sites, expr)?,
                Plan::Static => self.make_static(name, sites)?,
                Plan::Automatic => self.make_automatic(sites)?,
            }
        }
        self.finish()
    }

    /// `Dim("n", ...)` with its bounds narrowed to `min`/`max`; other arguments are kept.
    fn rewritten_call(&self, call: &ast::ExprCall, min: Option<i64>, max: Option<i64>) -> String {
        let existing = |key: &str| call.arguments.find_keyword(key).map(|k| &k.value);
        let bound = |key: &str, wanted: Option<i64>, tighter: fn(i64, i64) -> i64| match (
            existing(key),
            wanted,
        ) {
            (Some(old), Some(new)) => Some(
                names::int_literal(old)
                    .map_or(new, |old| tighter(old, new))
                    .to_string(),
            ),
            (Some(old), None) => Some(self.spec.slice(old).to_owned()),
            (None, Some(new)) => Some(new.to_string()),
            (None, None) => None,
        };
        let mut arguments: Vec<String> = call
            .arguments
            .args
            .iter()
            .map(|arg| self.spec.slice(arg).to_owned())
            .collect();
        for keyword in &call.arguments.keywords {
            match keyword.arg.as_ref().map(ast::Identifier::as_str) {
                Some("min" | "max") => {}
                _ => arguments.push(self.spec.slice(keyword).to_owned()),
            }
        }
        if let Some(min) = bound("min", min, i64::max) {
            arguments.push(format!("min={min}"));
        }
        if let Some(max) = bound("max", max, i64::min) {
            arguments.push(format!("max={max}"));
        }
        format!("{}({})", self.spec.slice(&*call.func), arguments.join(", "))
    }

    fn range(
        &mut self,
        name: &str,
        sites: &DimSites<'a>,
        min: Option<i64>,
        max: Option<i64>,
    ) -> Option<()> {
        if let Some((_, _, call)) = sites.variable {
            // Inline copies of the same dim must keep the same range: torch rejects two
            // definitions of one name that differ.
            for call in std::iter::once(call).chain(sites.inline.iter().copied()) {
                self.edits.push(Edit {
                    range: call.range(),
                    content: self.rewritten_call(call, min, max),
                });
            }
        } else if let Some((variable, assign)) = sites.helper {
            let dim = self.dim_name();
            let line = format!("{variable} = {dim}(\"{name}\"{})", bounds_text(min, max));
            self.insert_after(assign.range, &line);
        } else if !sites.inline.is_empty() {
            if self.new_variables.contains_key(name) {
                return Some(()); // Rewritten in its new definition.
            }
            for call in &sites.inline {
                self.edits.push(Edit {
                    range: call.range(),
                    content: self.rewritten_call(call, min, max),
                });
            }
        } else {
            return None;
        }
        Some(())
    }

    /// `expr` with each dim name replaced by the variable that holds the dim.
    fn spelled(&self, expr: &str) -> Option<String> {
        let mut out = String::new();
        let mut rest = expr;
        while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
            out.push_str(&rest[..start]);
            let tail = &rest[start..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            let name = &tail[..end];
            out.push_str(&self.reference(name)?);
            rest = &tail[end..];
        }
        out.push_str(rest);
        Some(out)
    }

    fn reference(&self, name: &str) -> Option<String> {
        if let Some(variable) = self.new_variables.get(name) {
            return Some(variable.clone());
        }
        let sites = self.spec.dims.get(name)?;
        sites
            .variable
            .map(|(variable, _, _)| variable.to_owned())
            .or_else(|| sites.helper.map(|(variable, _)| variable.to_owned()))
    }

    /// The statement where each dim `expr` refers to is bound, when it is an existing one.
    fn binding_statements(&self, expr: &str) -> Vec<TextRange> {
        identifiers(expr)
            .iter()
            .filter(|name| !self.new_variables.contains_key(name.as_str()))
            .filter_map(|name| self.spec.dims.get(name.as_str()))
            .filter_map(|sites| {
                sites
                    .variable
                    .map(|(_, assign, _)| assign.range)
                    .or_else(|| sites.helper.map(|(_, assign)| assign.range))
            })
            .collect()
    }

    fn alias(&mut self, name: &str, sites: &DimSites<'a>, expr: &str) -> Option<()> {
        if identifiers(expr).iter().any(|used| used == name) {
            return None;
        }
        let spelled = self.spelled(expr)?;
        let bound_after = self
            .binding_statements(expr)
            .into_iter()
            .map(TextRange::end)
            .max();
        if let Some((variable, assign, _)) = sites.variable {
            match bound_after {
                // A dim it refers to is bound later: move the definition after it.
                Some(after) if after > assign.range.start() => {
                    let own_line = self.own_lines(assign.range)?;
                    self.edits.push(Edit {
                        range: own_line,
                        content: String::new(),
                    });
                    let indent = indentation_at(self.file.text, assign.range.start()).to_owned();
                    self.insert_line(
                        line_end(self.file.text, after),
                        &format!("{indent}{variable} = {spelled}"),
                    );
                }
                _ => self.edits.push(Edit {
                    range: assign.value.range(),
                    content: spelled,
                }),
            }
        } else if let Some((variable, assign)) = sites.helper {
            let after = bound_after.map_or(assign.range, |after| {
                TextRange::new(assign.range.start(), after.max(assign.range.end()))
            });
            self.insert_after(after, &format!("{variable} = {spelled}"));
        } else if !sites.inline.is_empty() {
            for call in &sites.inline {
                self.edits.push(Edit {
                    range: call.range(),
                    content: spelled.clone(),
                });
            }
        } else {
            return None;
        }
        Some(())
    }

    /// Every spec entry that depends on the dim goes: a dictionary entry is removed, a tuple
    /// element becomes `Dim.STATIC` (`None` for a dimension is deprecated in torch 2.15). A
    /// variable left unused goes too.
    /// Every `Dim(...)` call that makes the dim becomes `Dim.AUTO` (spelled as the call's
    /// callee is: `torch.export.Dim.AUTO`).
    fn make_automatic(&mut self, sites: &DimSites<'a>) -> Option<()> {
        let calls: Vec<&ast::ExprCall> = sites
            .variable
            .map(|(_, _, call)| call)
            .into_iter()
            .chain(sites.inline.iter().copied())
            .collect();
        if calls.is_empty() {
            return None;
        }
        for call in calls {
            self.edits.push(Edit {
                range: call.range(),
                content: format!("{}.AUTO", self.spec.slice(&*call.func)),
            });
        }
        Some(())
    }

    fn make_static(&mut self, name: &str, sites: &DimSites<'a>) -> Option<()> {
        let mut removed: Vec<TextRange> = Vec::new();
        let slots: Vec<(&'a Expr, SlotContext<'a>)> = self
            .spec
            .slots
            .iter()
            .filter(|slot| slot.dims.contains(&name))
            .map(|slot| (slot.expr, slot.context))
            .collect();
        if slots.is_empty() {
            return None;
        }
        for (expr, context) in slots {
            match context {
                SlotContext::DictValue(dict, index) => {
                    let range = self.dict_entry_range(dict, index)?;
                    removed.push(range);
                    self.edits.push(Edit {
                        range,
                        content: String::new(),
                    });
                }
                SlotContext::Element => {
                    removed.push(expr.range());
                    let dim = self.dim_name();
                    self.edits.push(Edit {
                        range: expr.range(),
                        content: format!("{dim}.STATIC"),
                    });
                }
                SlotContext::Top => {
                    removed.push(expr.range());
                    self.edits.push(Edit {
                        range: expr.range(),
                        content: "None".to_owned(),
                    });
                }
            }
        }
        if let Some((variable, assign, _)) = sites.variable {
            let still_used = self.gathered.loads.iter().any(|(used, at)| {
                *used == variable && !removed.iter().any(|range| range.contains_range(*at))
            });
            if !still_used {
                if let Some(lines) = self.own_lines(assign.range) {
                    self.edits.push(Edit {
                        range: lines,
                        content: String::new(),
                    });
                }
            }
        }
        Some(())
    }

    /// The text of dictionary entry `index` with one comma next to it, so the rest still reads.
    fn dict_entry_range(&self, dict: &ast::ExprDict, index: usize) -> Option<TextRange> {
        let text = self.file.text;
        let item = dict.items.get(index)?;
        let start = item.key.as_ref()?.start();
        let end = item.value.end();
        if let Some(next) = dict.items.get(index + 1) {
            let next_start = next.key.as_ref().map_or(next.value.start(), Ranged::start);
            return Some(TextRange::new(start, next_start));
        }
        if index > 0 {
            let previous_end = dict.items[index - 1].value.end();
            // Keep a trailing comma and the layout after the last entry.
            return Some(TextRange::new(previous_end, end));
        }
        // The only entry: the dictionary becomes `{}`.
        let inner_end = TextSize::try_from(text[..dict.end().to_usize()].rfind('}')?).ok()?;
        Some(TextRange::new(
            dict.start() + TextSize::new(1),
            inner_end.max(end),
        ))
    }

    /// The whole lines of a statement that has them to itself.
    fn own_lines(&self, range: TextRange) -> Option<TextRange> {
        let text = self.file.text;
        let start = line_start(text, range.start());
        let end = line_end(text, range.end());
        let before = &text[start.to_usize()..range.start().to_usize()];
        let after = &text[range.end().to_usize()..end.to_usize()];
        let after_code = after.split('#').next().unwrap_or_default();
        (before.trim().is_empty() && after_code.trim().is_empty() && !after_code.contains(';'))
            .then(|| TextRange::new(start, end))
    }

    fn insert_after(&mut self, statement: TextRange, line: &str) {
        let indent = indentation_at(self.file.text, statement.start()).to_owned();
        self.insert_line(
            line_end(self.file.text, statement.end()),
            &format!("{indent}{line}"),
        );
    }

    fn insert_line(&mut self, at: TextSize, line: &str) {
        let newline = if at.to_usize() > 0 && !self.file.text[..at.to_usize()].ends_with('\n') {
            "\n"
        } else {
            ""
        };
        self.edits.push(Edit {
            range: TextRange::empty(at),
            content: format!("{newline}{line}\n"),
        });
    }

    /// Adds the new definitions and the import, merges insertions at one offset, and orders
    /// the edits.
    fn finish(mut self) -> Option<Vec<Edit>> {
        if !self.definitions.is_empty() {
            let statements: Vec<TextRange> = self
                .plans
                .keys()
                .chain(self.new_variables.keys())
                .filter_map(|name| self.spec.dims.get(name.as_str()))
                .flat_map(|sites| {
                    sites
                        .spec_statements
                        .iter()
                        .copied()
                        .chain(sites.variable.map(|(_, assign, _)| assign.range))
                        .chain(sites.helper.map(|(_, assign)| assign.range))
                })
                .collect();
            let first = statements.iter().copied().map(TextRange::start).min()?;
            let indent = indentation_at(self.file.text, first).to_owned();
            let mut block = String::new();
            for definition in &self.definitions {
                block.push_str(&indent);
                block.push_str(definition);
                block.push('\n');
            }
            self.edits.push(Edit {
                range: TextRange::empty(line_start(self.file.text, first)),
                content: block,
            });
        }
        if let Some(import) = self.import_edit.take() {
            self.edits.insert(0, import);
        }
        // One edit per insertion offset, in the order they were made (the import first).
        let mut merged: Vec<Edit> = Vec::new();
        for edit in self.edits {
            if edit.range.is_empty() {
                if let Some(existing) = merged.iter_mut().find(|known| {
                    known.range.is_empty() && known.range.start() == edit.range.start()
                }) {
                    existing.content.push_str(&edit.content);
                    continue;
                }
            }
            merged.push(edit);
        }
        merged.sort_by_key(|edit| (edit.range.start(), edit.range.end()));
        let overlapping = merged
            .windows(2)
            .any(|pair| pair[1].range.start() < pair[0].range.end());
        (!overlapping && !merged.is_empty()).then_some(merged)
    }
}

/// The names an expression like `2*_l + 1` uses.
fn identifiers(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::apply_fixes;
    use crate::syntax::parse;

    fn fixed(source: &str, constraints: &[DimConstraint]) -> Option<String> {
        let parsed = parse(source);
        let fix = constraint_fix(
            &parsed.module.body,
            SourceFile::detached(source),
            constraints,
            Applicability::Safe,
        )?;
        Some(apply_fixes(source, &[&fix]))
    }

    fn range(name: &str, min: Option<i64>, max: Option<i64>) -> DimConstraint {
        DimConstraint::Range {
            name: name.into(),
            min,
            max,
        }
    }

    const HEADER: &str = "import torch\nfrom torch.export import Dim\n\n";

    #[test]
    fn a_range_narrows_a_variable_and_keeps_other_bounds() {
        let source = format!(
            "{HEADER}batch = Dim(\"batch\", max=100)\ndynamic_shapes = {{\"x\": {{0: batch}}}}\n"
        );
        insta::assert_snapshot!(fixed(&source, &[range("batch", Some(6), None)]).unwrap(), @r#"
        import torch
        from torch.export import Dim

        batch = Dim("batch", min=6, max=100)
        dynamic_shapes = {"x": {0: batch}}
        "#);
    }

    #[test]
    fn a_file_that_only_declares_dims_gets_ranges_but_nothing_that_changes_a_spec() {
        let source =
            format!("{HEADER}MAX = 64\nBATCH = Dim(\"batch\", max=MAX)\nSEQ = Dim(\"seq\")\n");
        insta::assert_snapshot!(fixed(&source, &[range("batch", None, Some(16))]).unwrap(), @r#"
        import torch
        from torch.export import Dim

        MAX = 64
        BATCH = Dim("batch", max=16)
        SEQ = Dim("seq")
        "#);
        let equal = DimConstraint::Equal {
            name: "seq".into(),
            to: "batch".into(),
        };
        assert_eq!(fixed(&source, &[equal]), None);
    }

    #[test]
    fn a_range_rewrites_an_inline_dim_in_an_export_call() {
        let source = "import torch\n\ndef main(model, x):\n    return torch.export.export(\n        model, (x,), dynamic_shapes={\"x\": (torch.export.Dim(\"n\"), None)}\n    )\n";
        insta::assert_snapshot!(fixed(source, &[range("n", None, Some(16))]).unwrap(), @r#"
        import torch

        def main(model, x):
            return torch.export.export(
                model, (x,), dynamic_shapes={"x": (torch.export.Dim("n", max=16), None)}
            )
        "#);
    }

    #[test]
    fn an_equality_makes_one_variable_the_other() {
        let source = format!(
            "{HEADER}b = Dim(\"b\")\na = Dim(\"a\")\ndynamic_shapes = {{\"x\": {{0: a}}, \"y\": {{0: b}}}}\n"
        );
        let equal = DimConstraint::Equal {
            name: "b".into(),
            to: "a".into(),
        };
        // `a` is bound after `b`: `b = a` moves below it.
        insta::assert_snapshot!(fixed(&source, &[equal]).unwrap(), @r#"
        import torch
        from torch.export import Dim

        a = Dim("a")
        b = a
        dynamic_shapes = {"x": {0: a}, "y": {0: b}}
        "#);
    }

    #[test]
    fn an_equality_between_inline_dims_hoists_the_target() {
        let source = format!(
            "{HEADER}dynamic_shapes = {{\"x\": {{0: Dim(\"a\")}}, \"y\": {{0: Dim(\"b\")}}}}\n"
        );
        let equal = DimConstraint::Equal {
            name: "b".into(),
            to: "a".into(),
        };
        insta::assert_snapshot!(fixed(&source, &[equal]).unwrap(), @r#"
        import torch
        from torch.export import Dim

        a = Dim("a")
        dynamic_shapes = {"x": {0: a}, "y": {0: a}}
        "#);
    }

    #[test]
    fn a_derived_dim_gets_a_new_root_and_the_import() {
        let source = "import torch\nfrom torch import export\n\nseq = export.Dim(\"seq\", max=64)\ndynamic_shapes = ((seq, None),)\n";
        let constraints = [
            range("_seq", Some(1), None),
            DimConstraint::Derived {
                name: "seq".into(),
                expr: "2*_seq".into(),
            },
        ];
        insta::assert_snapshot!(fixed(source, &constraints).unwrap(), @r#"
        import torch
        from torch import export

        _seq = torch.export.Dim("_seq", min=1)
        seq = 2*_seq
        dynamic_shapes = ((seq, None),)
        "#);
        let bare =
            "import torch\nimport torch.nn as nn\n\nDS = {\"x\": {0: torch.export.Dim(\"l\")}}\n";
        let constraints = [
            range("_l", Some(1), None),
            DimConstraint::Derived {
                name: "l".into(),
                expr: "2*_l".into(),
            },
        ];
        insta::assert_snapshot!(fixed(&format!("{bare}m = torch.export.export(M(), a, dynamic_shapes=DS)\n"), &constraints).unwrap(), @r#"
        import torch
        import torch.nn as nn

        _l = torch.export.Dim("_l", min=1)
        DS = {"x": {0: 2*_l}}
        m = torch.export.export(M(), a, dynamic_shapes=DS)
        "#);
    }

    #[test]
    fn a_missing_import_is_added_for_new_dims() {
        let source = "import torch.nn as nn\nfrom torch.export import dims\n\na, b = dims(\"a\", \"b\")\ndynamic_shapes = {\"x\": {0: a, 1: b}}\n";
        insta::assert_snapshot!(fixed(source, &[range("b", None, Some(8))]).unwrap(), @r#"
        import torch.nn as nn
        from torch.export import dims
        from torch.export import Dim

        a, b = dims("a", "b")
        b = Dim("b", max=8)
        dynamic_shapes = {"x": {0: a, 1: b}}
        "#);
    }

    #[test]
    fn a_constant_removes_the_dim_from_the_spec() {
        let constant = DimConstraint::Constant {
            name: "batch".into(),
            value: 8,
        };
        let source = format!(
            "{HEADER}batch = Dim(\"batch\")\nseq = Dim(\"seq\")\ndynamic_shapes = {{\"x\": {{0: batch, 1: seq}}, \"y\": (batch,)}}\n"
        );
        insta::assert_snapshot!(fixed(&source, std::slice::from_ref(&constant)).unwrap(), @r#"
        import torch
        from torch.export import Dim

        seq = Dim("seq")
        dynamic_shapes = {"x": {1: seq}, "y": (Dim.STATIC,)}
        "#);
        let source = format!("{HEADER}dynamic_shapes = {{\"x\": {{0: Dim(\"batch\")}}}}\n");
        insta::assert_snapshot!(fixed(&source, &[constant]).unwrap(), @r#"
        import torch
        from torch.export import Dim

        dynamic_shapes = {"x": {}}
        "#);
    }

    #[test]
    fn unknown_dims_and_missing_specs_give_no_fix() {
        let source = format!("{HEADER}dynamic_shapes = {{\"x\": {{0: Dim(\"batch\")}}}}\n");
        assert_eq!(fixed(&source, &[range("other", None, Some(4))]), None);
        assert_eq!(fixed(HEADER, &[range("batch", None, Some(4))]), None);
        let derived_on_unknown = DimConstraint::Derived {
            name: "batch".into(),
            expr: "2*_nowhere".into(),
        };
        assert_eq!(fixed(&source, &[derived_on_unknown]), None);
    }
}

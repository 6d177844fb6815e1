//! The parser boundary: the only module that names ruff's parser crates.
//!
//! The rest of the analyzer reaches the syntax tree through [`ast`], so swapping the parser
//! means changing this module and the tree walks, not the rule table or the public API.

pub(crate) use ruff_python_ast as ast;
use ruff_python_parser::{Mode, ParseOptions};
use ruff_text_size::TextRange;

/// A parsed file: the (possibly partial) module and the syntax errors met on the way.
pub(crate) struct Parsed {
    pub(crate) module: ast::ModModule,
    pub(crate) errors: Vec<SyntaxError>,
    /// Every comment, `#` included, in source order.
    pub(crate) comments: Vec<TextRange>,
}

pub(crate) struct SyntaxError {
    pub(crate) message: String,
    pub(crate) range: TextRange,
}

/// `0`, `1.5`, `-1`: an int or float literal, possibly signed.
pub(crate) fn is_number_literal(value: &ast::Expr) -> bool {
    match value {
        ast::Expr::NumberLiteral(number) => !matches!(number.value, ast::Number::Complex { .. }),
        ast::Expr::UnaryOp(unary)
            if matches!(unary.op, ast::UnaryOp::USub | ast::UnaryOp::UAdd) =>
        {
            is_number_literal(&unary.operand)
        }
        _ => false,
    }
}

/// Parses one expression (a call's source text, say); `None` when it is not exactly one valid
/// expression.
pub(crate) fn parse_expression(source: &str) -> Option<ast::Expr> {
    let parsed = ruff_python_parser::parse_expression(source).ok()?;
    Some(*parsed.into_syntax().body)
}

/// Parses a module, recovering from errors: the returned tree holds every statement the
/// parser could make sense of, so later passes still see `if x.sum() > 0` with its colon missing.
pub(crate) fn parse(source: &str) -> Parsed {
    let parsed = ruff_python_parser::parse_unchecked(source, ParseOptions::from(Mode::Module));
    let mut errors: Vec<SyntaxError> = parsed
        .errors()
        .iter()
        .map(|error| SyntaxError {
            message: error.error.to_string(),
            range: error.location,
        })
        .collect();
    let (comments, too_deep) = comments_and_nesting(parsed.tokens());
    errors.extend(too_deep);
    let module = match parsed.into_syntax() {
        ast::Mod::Module(module) => module,
        // `Mode::Module` always yields a module; an expression is wrapped rather than lost.
        #[allow(clippy::default_trait_access)] // The body's vector type is the parser's own.
        ast::Mod::Expression(expression) => ast::ModModule {
            node_index: ast::AtomicNodeIndex::default(),
            range: expression.range,
            body: Default::default(),
        },
    };
    Parsed {
        module,
        errors,
        comments,
    }
}

/// CPython's tokenizer refuses more than this many open brackets at once.
const MAX_BRACKET_DEPTH: usize = 200;

/// Every comment's range, and the first bracket past CPython's nesting limit, which ruff's
/// parser accepts: the file cannot be imported ("too many nested parentheses"). One pass over
/// the tokens, which every file's parse pays for.
fn comments_and_nesting(tokens: &[ast::token::Token]) -> (Vec<TextRange>, Option<SyntaxError>) {
    use ast::token::TokenKind;
    let mut comments = Vec::new();
    let mut too_deep = None;
    let mut depth = 0_usize;
    for token in tokens {
        match token.kind() {
            TokenKind::Comment => comments.push(ruff_text_size::Ranged::range(token)),
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                depth += 1;
                if depth > MAX_BRACKET_DEPTH && too_deep.is_none() {
                    too_deep = Some(SyntaxError {
                        message: format!(
                            "too many nested parentheses: Python allows {MAX_BRACKET_DEPTH} levels"
                        ),
                        range: ruff_text_size::Ranged::range(token),
                    });
                }
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => {
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
    }
    (comments, too_deep)
}

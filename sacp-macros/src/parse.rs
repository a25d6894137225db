//! Reading the attributes: `#[proxy(crate = path)]` and `#[on_request(from = agent)]`.
//!
//! Arguments are `key = value` pairs separated by commas. Every problem is recorded (at the
//! key or value it is about) and parsing goes on with the next pair.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, Path, Token};

use crate::model::{
    ContentArgs, HandlerArgs, MessageKind, MethodAttr, Role, ServiceArgs, Side, ToolArgs,
};

/// Errors collected along the way; all of them are reported.
#[derive(Debug, Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, message));
    }

    /// How many errors so far (it only grows: comparing tells whether a step added any).
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// One `key = value` pair; `value` is `None` when there was no `=`.
struct Pair {
    key: Ident,
    value: Option<TokenStream>,
}

/// Splits `a = x, b = y::z` into pairs, recording what is not a pair.
fn pairs(tokens: TokenStream, what: &str, errors: &mut Errors) -> Vec<Pair> {
    let parser = |input: ParseStream<'_>| {
        let mut pairs = Vec::new();
        while !input.is_empty() {
            let key = match input.call(Ident::parse_any) {
                Ok(key) => key,
                Err(_) => {
                    let bad: TokenTree = input.parse()?;
                    errors.push(
                        bad.span(),
                        format_args!("expected an argument name in `#[{what}(...)]`"),
                    );
                    skip_to_comma(input)?;
                    continue;
                }
            };
            let value = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                Some(skip_to_comma(input)?)
            } else {
                None
            };
            pairs.push(Pair { key, value });
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(pairs)
    };
    match parser.parse2(tokens) {
        Ok(pairs) => pairs,
        Err(e) => {
            errors.0.push(e);
            Vec::new()
        }
    }
}

/// The versions of `protocol = 2` or `protocol = [1, 2]`: `None` when it is neither form,
/// an error when a version is not one the SDK knows (1 and 2) or is given twice.
fn protocols(value: TokenStream) -> Option<Result<Vec<u16>, String>> {
    let versions: Vec<syn::LitInt> = if let Ok(one) = syn::parse2::<syn::LitInt>(value.clone()) {
        vec![one]
    } else {
        let list = syn::parse2::<syn::ExprArray>(value).ok()?;
        let mut versions = Vec::new();
        for element in list.elems {
            match element {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(v),
                    ..
                }) => versions.push(v),
                _ => return None,
            }
        }
        versions
    };
    let mut list = Vec::new();
    for v in versions {
        match v.base10_parse::<u16>() {
            Ok(n @ (1 | 2)) if !list.contains(&n) => list.push(n),
            Ok(n @ (1 | 2)) => return Some(Err(format!("ACP v{n} is given twice"))),
            _ => {
                return Some(Err(format!(
                    "`{v}` is not an ACP version this SDK speaks: 1, or 2 (the draft)"
                )));
            }
        }
    }
    if list.is_empty() {
        return Some(Err("`protocol = []` speaks no version".to_owned()));
    }
    list.sort_unstable();
    Some(Ok(list))
}

fn skip_to_comma(input: ParseStream<'_>) -> syn::Result<TokenStream> {
    let mut value = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        value.extend([input.parse::<TokenTree>()?]);
    }
    Ok(value)
}

/// `#[proxy(crate = path, mcp_name = expr)]`, `#[agent(crate = path, mcp_over_acp)]`.
pub(crate) fn service_args(role: Role, tokens: TokenStream, errors: &mut Errors) -> ServiceArgs {
    let what = role.name();
    let mut args = ServiceArgs::default();
    for Pair { key, value } in pairs(tokens, what, errors) {
        if key == "mcp_name" && role == Role::Proxy {
            let parsed = value
                .as_ref()
                .and_then(|v| syn::parse2::<syn::Expr>(v.clone()).ok());
            match parsed {
                Some(_) if args.mcp_name.is_some() => {
                    errors.push(key.span(), "`mcp_name` is given twice")
                }
                Some(expr) => args.mcp_name = Some(expr),
                None => errors.push(
                    key.span(),
                    "expected `mcp_name = \"name\"` (or an expression of `self`, e.g. `mcp_name = self.name`)",
                ),
            }
            continue;
        }
        if key == "mcp_over_acp" && role == Role::Agent {
            match value {
                None if args.mcp_over_acp => {
                    errors.push(key.span(), "`mcp_over_acp` is given twice")
                }
                None => args.mcp_over_acp = true,
                Some(value) => errors.push(
                    span_of(&value, key.span()),
                    "`mcp_over_acp` takes no value: write `#[agent(mcp_over_acp)]`",
                ),
            }
            continue;
        }
        if key == "protocol" {
            let parsed = value.as_ref().and_then(|v| protocols(v.clone()));
            match parsed {
                Some(_) if args.protocols.is_some() => {
                    errors.push(key.span(), "`protocol` is given twice")
                }
                Some(Ok(list)) => args.protocols = Some(list),
                Some(Err(why)) => errors.push(key.span(), why),
                None => errors.push(
                    key.span(),
                    "expected `protocol = 2` or `protocol = [1, 2]`: the ACP versions spoken",
                ),
            }
            continue;
        }
        if key != "crate" {
            let expected = match role {
                Role::Proxy => "`crate = path`, `mcp_name = \"name\"` or `protocol = N`",
                Role::Agent => "`crate = path`, `mcp_over_acp` or `protocol = N`",
            };
            errors.push(
                key.span(),
                format_args!("unknown `#[{what}]` argument `{key}`; expected {expected}"),
            );
            continue;
        }
        let Some(value) = value else {
            errors.push(key.span(), "expected `crate = path`, e.g. `crate = ::sacp`");
            continue;
        };
        match Path::parse_mod_style.parse2(value.clone()) {
            Ok(path) if args.krate.is_none() => args.krate = Some(path),
            Ok(_) => errors.push(key.span(), "`crate` is given twice"),
            Err(_) => errors.push(
                span_of(&value, key.span()),
                "expected a path after `crate =`, e.g. `crate = ::sacp`",
            ),
        }
    }
    args
}

/// The helper attribute on a method, if there is one: a handler's, `#[tool(...)]` or
/// `#[mcp_server]`.
pub(crate) fn method_attr(attr: &Attribute, errors: &mut Errors) -> Option<MethodAttr> {
    let last = attr.path().segments.last()?;
    match last.ident.to_string().as_str() {
        "tool" => Some(MethodAttr::Tool(tool_attr(attr, errors))),
        "content" => Some(MethodAttr::Content(content_attr(attr, errors))),
        "mcp_server" => {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                errors.push(attr.span(), "`#[mcp_server]` takes no arguments");
            }
            Some(MethodAttr::McpServer(attr.span()))
        }
        _ => handler_attr(attr, errors).map(MethodAttr::Handler),
    }
}

/// `#[tool]` or `#[tool(name = "…")]`.
fn tool_attr(attr: &Attribute, errors: &mut Errors) -> ToolArgs {
    let mut args = ToolArgs {
        name: None,
        span: attr.span(),
    };
    let tokens = match &attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(list) => list.tokens.clone(),
        syn::Meta::NameValue(nv) => {
            errors.push(nv.eq_token.span, "write `#[tool(name = \"…\")]`");
            return args;
        }
    };
    for Pair { key, value } in pairs(tokens, "tool", errors) {
        if key != "name" {
            errors.push(
                key.span(),
                format_args!("unknown `#[tool]` argument `{key}`; expected `name = \"…\"`"),
            );
            continue;
        }
        let name = value
            .as_ref()
            .and_then(|v| syn::parse2::<syn::LitStr>(v.clone()).ok());
        let span = value
            .as_ref()
            .map_or(key.span(), |v| span_of(v, key.span()));
        match name {
            Some(lit) if valid_tool_name(&lit.value()) => args.name = Some(lit.value()),
            Some(_) => errors.push(
                span,
                "a tool's name is 1 to 128 letters, digits, `_`, `-` or `.`",
            ),
            None => errors.push(span, "expected `name = \"…\"`"),
        }
    }
    args
}

/// `#[content("type/subtype")]`: the media range a proxy's method transforms.
fn content_attr(attr: &Attribute, errors: &mut Errors) -> ContentArgs {
    let mut args = ContentArgs {
        range: None,
        span: attr.span(),
    };
    let expected =
        "expected a media type or range: `#[content(\"text/html\")]`, `#[content(\"image/*\")]`";
    let syn::Meta::List(list) = &attr.meta else {
        errors.push(attr.span(), expected);
        return args;
    };
    match syn::parse2::<syn::LitStr>(list.tokens.clone()) {
        Ok(lit) if valid_media_range(&lit.value()) => {
            args.range = Some(lit.value().to_ascii_lowercase());
        }
        Ok(lit) => errors.push(
            lit.span(),
            format_args!("`{}` is not a media type or range; {expected}", lit.value()),
        ),
        Err(_) => errors.push(span_of(&list.tokens, attr.span()), expected),
    }
    args
}

/// `type/subtype`, `type/*` or `*/*`, each part a media type token.
pub(crate) fn valid_media_range(range: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    match range.split_once('/') {
        Some(("*", "*")) => true,
        Some((kind, "*")) => token(kind),
        Some((kind, sub)) => token(kind) && token(sub),
        None => false,
    }
}

/// What MCP allows in a tool's name.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The handler attribute on a method, if there is one: `#[on_request]`, `#[on_request(...)]`
/// or `#[sacp::on_notification]`. Its arguments are read into [`HandlerArgs`].
pub(crate) fn handler_attr(attr: &Attribute, errors: &mut Errors) -> Option<HandlerArgs> {
    let last = attr.path().segments.last()?;
    let kind = MessageKind::from_attr(&last.ident.to_string())?;
    let mut args = HandlerArgs {
        kind,
        from: Side::Client,
        from_span: None,
        span: attr.span(),
    };
    let tokens = match &attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(list) => list.tokens.clone(),
        syn::Meta::NameValue(nv) => {
            errors.push(
                nv.eq_token.span,
                format_args!(
                    "write `#[{}(from = agent)]`, not `=` after the name",
                    kind.attr()
                ),
            );
            return Some(args);
        }
    };
    let what = kind.attr();
    for Pair { key, value } in pairs(tokens, what, errors) {
        if key != "from" {
            errors.push(
                key.span(),
                format_args!(
                    "unknown `#[{what}]` argument `{key}`; expected `from = client` or `from = agent`"
                ),
            );
            continue;
        }
        let side = value
            .as_ref()
            .and_then(|v| syn::parse2::<Ident>(v.clone()).ok());
        let span = value
            .as_ref()
            .map_or(key.span(), |v| span_of(v, key.span()));
        match side.as_ref().map(Ident::to_string).as_deref() {
            Some("client") => args.from = Side::Client,
            Some("agent") => args.from = Side::Agent,
            _ => {
                errors.push(span, "expected `from = client` or `from = agent`");
                continue;
            }
        }
        if args.from_span.is_some() {
            errors.push(key.span(), "`from` is given twice");
        }
        args.from_span = Some(span);
    }
    Some(args)
}

fn span_of(tokens: &TokenStream, default: Span) -> Span {
    tokens
        .clone()
        .into_iter()
        .next()
        .map_or(default, |t| t.span())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn handler(attr: Attribute) -> (Option<HandlerArgs>, Vec<String>) {
        let mut errors = Errors::default();
        let args = handler_attr(&attr, &mut errors);
        (args, errors.0.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn reads_handler_attributes() {
        let (args, errors) = handler(syn::parse_quote!(#[on_request]));
        let args = args.unwrap();
        assert_eq!((args.kind, args.from), (MessageKind::Request, Side::Client));
        assert!(errors.is_empty());

        let (args, errors) = handler(syn::parse_quote!(#[sacp::on_notification(from = agent)]));
        let args = args.unwrap();
        assert_eq!(
            (args.kind, args.from),
            (MessageKind::Notification, Side::Agent)
        );
        assert!(errors.is_empty());

        assert!(handler(syn::parse_quote!(#[doc = "x"])).0.is_none());
    }

    #[test]
    fn reports_every_bad_argument() {
        let (_, errors) =
            handler(syn::parse_quote!(#[on_request(form = agent, from = server, from)]));
        assert_eq!(
            errors,
            [
                "unknown `#[on_request]` argument `form`; expected `from = client` or `from = agent`",
                "expected `from = client` or `from = agent`",
                "expected `from = client` or `from = agent`",
            ]
        );
    }

    #[test]
    fn reads_service_arguments() {
        let mut errors = Errors::default();
        let args = service_args(Role::Proxy, quote!(crate = ::my::sacp), &mut errors);
        assert!(errors.is_empty());
        let path = args.krate.unwrap();
        assert_eq!(quote!(#path).to_string(), ":: my :: sacp");

        let args = service_args(Role::Agent, quote!(krate = x, crate = 1), &mut errors);
        assert!(args.krate.is_none());
        let errors: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "unknown `#[agent]` argument `krate`; expected `crate = path`, `mcp_over_acp` or `protocol = N`",
                "expected a path after `crate =`, e.g. `crate = ::sacp`",
            ]
        );
    }

    #[test]
    fn reads_content_ranges() {
        let mut errors = Errors::default();
        let attr: Attribute = syn::parse_quote!(#[content("Text/HTML")]);
        let args = content_attr(&attr, &mut errors);
        assert_eq!(args.range.as_deref(), Some("text/html"));
        assert!(errors.is_empty());
        for bad in [
            quote!(#[content("html")]),
            quote!(#[content("*/html")]),
            quote!(#[content(text)]),
            quote!(#[content]),
        ] {
            let mut errors = Errors::default();
            let attr: Attribute = syn::parse_quote!(#bad);
            assert!(content_attr(&attr, &mut errors).range.is_none(), "{bad}");
            assert_eq!(errors.0.len(), 1, "{bad}");
        }
        assert!(valid_media_range("image/*") && valid_media_range("*/*"));
        assert!(valid_media_range("application/vnd.sacp+json"));
    }

    #[test]
    fn reads_the_versions_spoken() {
        let mut errors = Errors::default();
        let args = service_args(Role::Agent, quote!(protocol = 2), &mut errors);
        assert_eq!(args.protocols, Some(vec![2]));
        let args = service_args(Role::Proxy, quote!(protocol = [2, 1]), &mut errors);
        assert_eq!(args.protocols, Some(vec![1, 2]));
        assert!(errors.is_empty());
        for bad in [
            quote!(protocol = []),
            quote!(protocol = "2"),
            quote!(protocol),
        ] {
            let mut errors = Errors::default();
            let args = service_args(Role::Agent, bad.clone(), &mut errors);
            assert!(args.protocols.is_none(), "{bad}");
            assert_eq!(errors.0.len(), 1, "{bad}");
        }
    }
}

//! Checking handlers: the signature of each, and that no route is taken twice.
//!
//! A handler is `async fn name(&self, message: T, cx: &Cx) -> Result<…, E>`. What the macro
//! cannot know — whether `T` is an ACP message of the right side, whether the return type fits —
//! is left to the compiler, through bounds that carry the user's spans.

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, ImplItemFn, Type};

use crate::model::{Content, ContentArgs, Handler, HandlerArgs, Role, Side, Tool, ToolArgs};
use crate::parse::Errors;

/// Checks one handler method; returns the handler when its signature is usable.
pub(crate) fn handler(
    role: Role,
    args: &HandlerArgs,
    method: &ImplItemFn,
    errors: &mut Errors,
) -> Option<Handler> {
    let sig = &method.sig;
    let attr = args.kind.attr();
    let before = errors.len();

    if let (Role::Agent, Side::Agent, Some(span)) = (role, args.from, args.from_span) {
        errors.push(
            span,
            "an agent only receives messages from its client; `from = agent` is for `#[proxy]` handlers",
        );
    }
    if sig.asyncness.is_none() {
        errors.push(
            sig.fn_token.span,
            format_args!("a `#[{attr}]` handler must be an `async fn`"),
        );
    }
    if !sig.generics.params.is_empty() {
        errors.push(
            sig.generics.span(),
            format_args!("a `#[{attr}]` handler cannot be generic"),
        );
    }

    let expected = "`(&self, message: T, cx: &Cx)`";
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(receiver)) => {
            let by_ref = receiver.reference.is_some() && receiver.colon_token.is_none();
            if by_ref && receiver.mutability.is_some() {
                errors.push(
                    receiver.span(),
                    format_args!(
                        "a `#[{attr}]` handler takes `&self`, not `&mut self`: handlers run \
                         concurrently (a prompt handler awaiting the agent must not hold up the \
                         agent's requests to this {role}, nor other sessions); keep the state \
                         you change behind a `Mutex`, atomics or another type with interior \
                         mutability, and write `&self`",
                        role = role.name()
                    ),
                );
            } else if !by_ref {
                errors.push(
                    receiver.span(),
                    format_args!("a `#[{attr}]` handler takes `&self`: {expected}"),
                );
            }
        }
        Some(other) => errors.push(
            other.span(),
            format_args!("a `#[{attr}]` handler takes `&self` first: {expected}"),
        ),
        None => errors.push(
            sig.ident.span(),
            format_args!("a `#[{attr}]` handler takes {expected}"),
        ),
    }
    let message = match inputs.next() {
        Some(FnArg::Typed(message)) => Some(&*message.ty),
        _ => None,
    };
    let has_cx = matches!(inputs.next(), Some(FnArg::Typed(_)));
    let extra: Vec<_> = inputs.collect();
    if let Some(first) = extra.first() {
        errors.push(
            first.span(),
            format_args!(
                "a `#[{attr}]` handler takes exactly two parameters after `self`: {expected}"
            ),
        );
    } else if message.is_none() || !has_cx {
        errors.push(
            sig.paren_token.span.join(),
            format_args!("a `#[{attr}]` handler takes {expected}"),
        );
    }
    if let Some(Type::ImplTrait(t)) = message {
        errors.push(t.span(), "the message type must be a concrete ACP type");
    }

    if errors.len() > before {
        return None;
    }
    Some(Handler {
        kind: args.kind,
        from: args.from,
        name: sig.ident.clone(),
        message: message?.clone(),
        output_span: match &sig.output {
            syn::ReturnType::Type(_, ty) => ty.span(),
            syn::ReturnType::Default => sig.paren_token.span.join(),
        },
    })
}

/// Reports a second handler for the same message type and side, at the second one.
pub(crate) fn routes(handlers: &[Handler], errors: &mut Errors) {
    for (i, later) in handlers.iter().enumerate() {
        let key = route_key(later);
        if let Some(first) = handlers[..i].iter().find(|h| route_key(h) == key) {
            errors.push(
                later.message.span(),
                format_args!(
                    "`{}` from the {} is already handled by `{}`; each message type and side takes one handler",
                    later.message.to_token_stream(),
                    later.from.name(),
                    first.name,
                ),
            );
        }
    }
}

fn route_key(handler: &Handler) -> (crate::model::MessageKind, Side, String) {
    (
        handler.kind,
        handler.from,
        handler.message.to_token_stream().to_string(),
    )
}

/// The doc comment of a method, as one text.
fn doc_of(method: &ImplItemFn) -> String {
    let lines: Vec<String> = method
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').unwrap_or(&line).to_owned())
        .collect();
    lines.join("\n").trim().to_owned()
}

/// Checks a `#[tool]` method: `async fn name(&self, [input: T,] cx: &ToolCx) -> Result<…>`.
pub(crate) fn tool(
    role: Role,
    args: &ToolArgs,
    method: &ImplItemFn,
    errors: &mut Errors,
) -> Option<Tool> {
    let sig = &method.sig;
    let before = errors.len();
    if role == Role::Agent {
        errors.push(
            args.span,
            "`#[tool]` methods belong in a `#[sacp::proxy]`: a proxy gives the agent tools",
        );
        return None;
    }
    let expected = "`(&self, input: T, cx: &ToolCx)` or `(&self, cx: &ToolCx)`";
    if sig.asyncness.is_none() {
        errors.push(sig.fn_token.span, "a `#[tool]` must be an `async fn`");
    }
    if !sig.generics.params.is_empty() {
        errors.push(sig.generics.span(), "a `#[tool]` cannot be generic");
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r))
            if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() => {}
        Some(FnArg::Receiver(r)) => errors.push(
            r.span(),
            "a `#[tool]` takes `&self`: tools run concurrently with each other and with the \
             proxy's handlers; keep the state they change behind a `Mutex` or atomics",
        ),
        Some(other) => errors.push(
            other.span(),
            format_args!("a `#[tool]` takes `&self` first: {expected}"),
        ),
        None => errors.push(
            sig.ident.span(),
            format_args!("a `#[tool]` takes {expected}"),
        ),
    }
    let rest: Vec<&FnArg> = inputs.collect();
    let input = match rest.as_slice() {
        [_cx] => None,
        [FnArg::Typed(input), _cx] => Some((*input.ty).clone()),
        _ => {
            errors.push(
                sig.paren_token.span.join(),
                format_args!("a `#[tool]` takes {expected}"),
            );
            None
        }
    };
    if let Some(Type::ImplTrait(t)) = &input {
        errors.push(t.span(), "a tool's input must be a concrete type");
    }
    let output_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => {
            errors.push(
                sig.paren_token.span.join(),
                "a `#[tool]` returns `Result<T, E>`: T is its output (text, a `Serialize` value \
                 or a `CallToolResult`), an `Err` its error",
            );
            sig.paren_token.span.join()
        }
    };
    let name = args.name.clone().unwrap_or_else(|| sig.ident.to_string());
    if args.name.is_none() && !crate::parse::valid_tool_name(&name) {
        errors.push(sig.ident.span(), "a tool's name is 1 to 128 letters, digits, `_`, `-` or `.`; give one with `#[tool(name = \"…\")]`");
    }
    if errors.len() > before {
        return None;
    }
    Some(Tool {
        name,
        method: sig.ident.clone(),
        input,
        description: doc_of(method),
        output_span,
    })
}

/// Checks a `#[mcp_server]` method: `fn name(&self) -> impl McpServer`.
pub(crate) fn mcp_server(
    role: Role,
    span: proc_macro2::Span,
    method: &ImplItemFn,
    errors: &mut Errors,
) -> Option<syn::Ident> {
    let sig = &method.sig;
    let before = errors.len();
    if role == Role::Agent {
        errors.push(
            span,
            "`#[mcp_server]` methods belong in a `#[sacp::proxy]`: a proxy gives the agent MCP servers",
        );
        return None;
    }
    let expected = "`#[mcp_server]` is `fn name(&self) -> impl McpServer`";
    if let Some(token) = sig.asyncness {
        errors.push(token.span, format_args!("{expected}, not `async`"));
    }
    let shape_ok = matches!(
        sig.inputs.iter().collect::<Vec<_>>().as_slice(),
        [FnArg::Receiver(r)] if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none()
    );
    if !shape_ok || !sig.generics.params.is_empty() {
        errors.push(sig.paren_token.span.join(), expected);
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        errors.push(sig.paren_token.span.join(), expected);
    }
    (errors.len() == before).then(|| sig.ident.clone())
}

/// Reports a second tool of the same name, at the second one.
pub(crate) fn tool_names(tools: &[Tool], errors: &mut Errors) {
    for (i, later) in tools.iter().enumerate() {
        if let Some(first) = tools[..i].iter().find(|t| t.name == later.name) {
            errors.push(
                later.method.span(),
                format_args!(
                    "a tool named `{}` exists already (`{}`); give one of them another with `#[tool(name = \"…\")]`",
                    later.name, first.method
                ),
            );
        }
    }
}

/// Checks a `#[content("…")]` method: `fn name(&self, block: ContentBlock) -> ContentBlock`.
pub(crate) fn content(
    role: Role,
    args: &ContentArgs,
    method: &ImplItemFn,
    errors: &mut Errors,
) -> Option<Content> {
    let sig = &method.sig;
    let before = errors.len();
    if role == Role::Agent {
        errors.push(
            args.span,
            "`#[content]` methods belong in a `#[sacp::proxy]`: a proxy transforms content on \
             its way to a neighbour that cannot take it",
        );
        return None;
    }
    let expected = "`#[content(\"…\")]` is `fn name(&self, block: ContentBlock) -> ContentBlock`";
    if let Some(token) = sig.asyncness {
        errors.push(
            token.span,
            format_args!("{expected}, not `async`: it runs as the message is sent"),
        );
    }
    let shape_ok = matches!(
        sig.inputs.iter().collect::<Vec<_>>().as_slice(),
        [FnArg::Receiver(r), FnArg::Typed(_)]
            if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none()
    );
    if !shape_ok || !sig.generics.params.is_empty() {
        errors.push(sig.paren_token.span.join(), expected);
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        errors.push(sig.paren_token.span.join(), expected);
    }
    if errors.len() > before {
        return None;
    }
    Some(Content {
        range: args.range.clone()?,
        method: sig.ident.clone(),
    })
}

/// Reports a second `#[content]` method of the same media range, at the second one.
pub(crate) fn content_ranges(contents: &[Content], errors: &mut Errors) {
    for (i, later) in contents.iter().enumerate() {
        if let Some(first) = contents[..i].iter().find(|c| c.range == later.range) {
            errors.push(
                later.method.span(),
                format_args!(
                    "`{}` is transformed already by `{}`; each media range takes one `#[content]` method",
                    later.range, first.method
                ),
            );
        }
    }
}

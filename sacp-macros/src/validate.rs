//! Checking handlers: the signature of each, and that no route is taken twice.
//!
//! A handler is `async fn name(&self, message: T, cx: &Cx) -> Result<…, E>`. What the macro
//! cannot know — whether `T` is an ACP message of the right side, whether the return type fits —
//! is left to the compiler, through bounds that carry the user's spans.

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, ImplItemFn, Type};

use crate::model::{Handler, HandlerArgs, Role, Side};
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

    let cx = match role {
        Role::Proxy => "cx: &Cx",
        Role::Agent => "cx: &AgentCx",
    };
    let expected = format!("`(&self, message: T, {cx})`");
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

fn route_key(handler: &Handler) -> (crate::model::Kind, Side, String) {
    (
        handler.kind,
        handler.from,
        handler.message.to_token_stream().to_string(),
    )
}

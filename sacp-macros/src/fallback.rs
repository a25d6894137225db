//! What is emitted next to errors: the user's code, plus an impl that forwards everything, so
//! the errors are the only ones (no "`X` is not a proxy" where the proxy is served, no unknown
//! attribute errors for the stripped helpers).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemImpl, Path};

use crate::expand;
use crate::model::{MessageKind, Role};
use crate::parse::Errors;

/// The errors, the impl block (helper attributes removed) and a handler-less trait impl.
pub(crate) fn service(role: Role, krate: &Path, item: &ItemImpl, errors: &Errors) -> TokenStream {
    let errors = errors.to_compile_errors();
    let stub = expand::trait_impl(role, krate, item, &[], false, None);
    quote! {
        #errors
        #item
        #stub
    }
}

/// `#[proxy]` on something that is not an impl block.
pub(crate) fn not_an_impl(role: Role, item: TokenStream, errors: &Errors) -> TokenStream {
    let errors = errors.to_compile_errors();
    let message = format!(
        "`#[{0}]` goes on an impl block: `#[sacp::{0}] impl MyType {{ ... }}`",
        role.name()
    );
    quote! {
        #errors
        ::core::compile_error!(#message);
        #item
    }
}

/// `#[tool]` / `#[mcp_server]` that no `#[proxy]` removed.
pub(crate) fn misplaced_mcp(attr: &str, item: TokenStream) -> TokenStream {
    let message =
        format!("`#[{attr}]` only works on a method of an impl block marked `#[sacp::proxy]`");
    quote! {
        ::core::compile_error!(#message);
        #item
    }
}

/// `#[on_request]` / `#[on_notification]` that no `#[proxy]` or `#[agent]` removed.
pub(crate) fn misplaced(kind: MessageKind, item: TokenStream) -> TokenStream {
    let message = format!(
        "`#[{}]` only works on a method of an impl block marked `#[sacp::proxy]` or `#[sacp::agent]`",
        kind.attr()
    );
    quote! {
        ::core::compile_error!(#message);
        #item
    }
}

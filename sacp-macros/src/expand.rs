//! Writing the output: the user's impl block without the helper attributes, plus one
//! `impl Proxy` (or `impl Agent`) whose `dispatch` is a ladder of rungs, one per handler:
//! "take the message as `T` from this side; if it is one, call the handler and answer with its
//! result; otherwise go on", ending in the runtime's default (forward, or `-32601`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItem, ItemImpl, Path};

use crate::fallback;
use crate::model::{Handler, MessageKind, MethodAttr, Role, Service, Side};
use crate::parse::{self, Errors};
use crate::validate;

/// The whole expansion of `#[proxy]` / `#[agent]`.
pub(crate) fn service(role: Role, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = parse::service_args(role, attr, &mut errors);
    let Ok(mut item) = syn::parse2::<ItemImpl>(item.clone()) else {
        return fallback::not_an_impl(role, item, &errors);
    };
    let krate = args.krate.unwrap_or_else(|| syn::parse_quote!(::sacp));
    if let Some((_, path, _)) = &item.trait_ {
        errors.push(
            path.span(),
            format_args!(
                "`#[{}]` goes on an inherent impl block (`impl MyType {{ ... }}`), not on a trait impl",
                role.name()
            ),
        );
    }

    let mut handlers = Vec::new();
    let mut tools = Vec::new();
    let mut servers = Vec::new();
    let mut contents = Vec::new();
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let mut found = Vec::new();
        method
            .attrs
            .retain(|attr| match parse::method_attr(attr, &mut errors) {
                Some(args) => {
                    found.push(args);
                    false
                }
                None => true,
            });
        let mut found = found.into_iter();
        let Some(args) = found.next() else {
            continue;
        };
        for extra in found {
            errors.push(
                extra.span(),
                "a method takes one of `#[on_request]`, `#[on_notification]`, `#[tool]`, \
                 `#[mcp_server]` and `#[content]`",
            );
        }
        match args {
            MethodAttr::Handler(args) => {
                if let Some(handler) = validate::handler(role, &args, method, &mut errors) {
                    handlers.push(handler);
                }
            }
            MethodAttr::Tool(args) => {
                if let Some(tool) = validate::tool(role, &args, method, &mut errors) {
                    tools.push(tool);
                }
            }
            MethodAttr::McpServer(span) => {
                if let Some(server) = validate::mcp_server(role, span, method, &mut errors) {
                    servers.push(server);
                }
            }
            MethodAttr::Content(args) => {
                if let Some(content) = validate::content(role, &args, method, &mut errors) {
                    contents.push(content);
                }
            }
        }
    }
    validate::routes(&handlers, &mut errors);
    validate::content_ranges(&contents, &mut errors);
    validate::tool_names(&tools, &mut errors);

    if !errors.is_empty() {
        return fallback::service(role, &krate, &item, &errors);
    }
    emit(&Service {
        role,
        krate,
        item,
        handlers,
        tools,
        servers,
        contents,
        mcp_name: args.mcp_name,
        mcp_over_acp: args.mcp_over_acp,
        protocols: args.protocols,
    })
}

/// `trait_impl` (whose last token is the impl's body) with `items` added at the end of its body.
fn into_impl(trait_impl: TokenStream, items: TokenStream) -> TokenStream {
    let mut tokens: Vec<_> = trait_impl.into_iter().collect();
    match tokens.pop() {
        Some(proc_macro2::TokenTree::Group(body)) => {
            let mut inner = body.stream();
            inner.extend(items);
            tokens.push(proc_macro2::TokenTree::Group(proc_macro2::Group::new(
                body.delimiter(),
                inner,
            )));
        }
        Some(other) => tokens.push(other),
        None => {}
    }
    tokens.into_iter().collect()
}

fn emit(service: &Service) -> TokenStream {
    let item = &service.item;
    let mut trait_impl = trait_impl(
        service.role,
        &service.krate,
        item,
        &service.handlers,
        service.mcp_over_acp,
        service.protocols.as_deref(),
    );
    // A proxy with nothing typed (no handler, tool or server) reads nothing it forwards: it
    // speaks every version the SDK forwards, so a v2 chain through it stays v2.
    if service.role == Role::Proxy
        && service.protocols.is_none()
        && service.handlers.is_empty()
        && service.tools.is_empty()
        && service.servers.is_empty()
        && service.contents.is_empty()
    {
        let krate = &service.krate;
        trait_impl = into_impl(
            trait_impl,
            quote!(const PROTOCOLS: &'static [u16] = #krate::__private::FORWARDED_VERSIONS;),
        );
    }
    // The proxy's MCP servers go inside its `impl Proxy` too.
    let servers = mcp_servers(service);
    if !servers.is_empty() {
        trait_impl = into_impl(trait_impl, servers);
    }
    let contents = content_handlers(service);
    if !contents.is_empty() {
        trait_impl = into_impl(trait_impl, contents);
    }
    let tool_set = tool_set(service);
    quote! {
        #item
        #trait_impl
        #tool_set
    }
}

/// `CONTENT` and `fn transform` of `impl Proxy`: the `#[content("…")]` methods, each called
/// for a block of its media range.
fn content_handlers(service: &Service) -> TokenStream {
    if service.contents.is_empty() {
        return TokenStream::new();
    }
    let krate = &service.krate;
    let ranges = service.contents.iter().map(|c| &c.range);
    let rungs = service.contents.iter().map(|content| {
        let (range, method) = (&content.range, &content.method);
        quote_spanned! {method.span()=>
            if #krate::protocol::content::matches(#range, media_type) {
                return ::std::option::Option::Some(Self::#method(self, block));
            }
        }
    });
    quote! {
        const CONTENT: &'static [&'static str] = &[#(#ranges),*];

        fn transform(
            &self,
            media_type: &str,
            block: #krate::acp::ContentBlock,
        ) -> ::std::option::Option<#krate::acp::ContentBlock> {
            #(#rungs)*
            let _ = block;
            ::std::option::Option::None
        }
    }
}

/// `fn mcp_servers` of `impl Proxy`: the `#[tool]` server and the `#[mcp_server]`s.
fn mcp_servers(service: &Service) -> TokenStream {
    if service.tools.is_empty() && service.servers.is_empty() {
        return TokenStream::new();
    }
    let krate = &service.krate;
    let tools = (!service.tools.is_empty()).then(|| {
        quote! {
            servers.push(::std::sync::Arc::new(#krate::mcp::ToolServer::new(
                ::std::sync::Arc::clone(this),
            )));
        }
    });
    let others = service.servers.iter().map(|method| {
        quote_spanned! {method.span()=>
            servers.push(::std::sync::Arc::new(Self::#method(this)));
        }
    });
    quote! {
        fn mcp_servers(
            this: &::std::sync::Arc<Self>,
        ) -> ::std::vec::Vec<::std::sync::Arc<dyn #krate::mcp::McpServer>> {
            let mut servers: ::std::vec::Vec<::std::sync::Arc<dyn #krate::mcp::McpServer>> =
                ::std::vec::Vec::new();
            #tools
            #(#others)*
            servers
        }
    }
}

/// `impl ToolSet`: the tools' definitions, and a match that calls them.
fn tool_set(service: &Service) -> TokenStream {
    if service.tools.is_empty() {
        return TokenStream::new();
    }
    let krate = &service.krate;
    let item = &service.item;
    let (impl_generics, _, where_clause) = item.generics.split_for_impl();
    let self_ty = &item.self_ty;
    let name = match &service.mcp_name {
        Some(expr) => quote!(::std::string::ToString::to_string(&(#expr))),
        None => {
            let kebab = kebab_name(self_ty);
            quote!(::std::string::ToString::to_string(#kebab))
        }
    };
    let definitions = service.tools.iter().map(|tool| {
        let (name, description) = (&tool.name, &tool.description);
        match &tool.input {
            Some(input) => quote_spanned! {input.span()=>
                #krate::__private::tool_definition::<#input>(#name, #description)
            },
            None => quote! {
                #krate::__private::tool_definition_without_input(#name, #description)
            },
        }
    });
    let arms = service.tools.iter().map(|tool| {
        let (name, method) = (&tool.name, &tool.method);
        let call = match &tool.input {
            Some(input) => {
                let parse = quote_spanned! {input.span()=>
                    #krate::__private::tool_input::<#input>(#name, arguments)
                };
                quote! {
                    let input = match #parse {
                        ::core::result::Result::Ok(input) => input,
                        ::core::result::Result::Err(e) => {
                            return ::core::option::Option::Some(::core::result::Result::Err(e));
                        }
                    };
                    Self::#method(self, input, cx).await
                }
            }
            None => quote!(Self::#method(self, cx).await),
        };
        let output = format_ident!("output", span = tool.output_span);
        let convert = quote_spanned! {tool.output_span=>
            (&&&#krate::__private::ToolOutput::new(#output)).take_tool_result()
        };
        quote! {
            #name => {
                let result = { #call };
                ::core::option::Option::Some(match result {
                    ::core::result::Result::Ok(#output) => #convert,
                    ::core::result::Result::Err(error) => {
                        ::core::result::Result::Ok(#krate::__private::tool_error(error))
                    }
                })
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::mcp::ToolSet for #self_ty #where_clause {
            fn server_name(&self) -> ::std::string::String {
                #name
            }

            fn server_version(&self) -> ::std::string::String {
                ::std::string::ToString::to_string(::core::env!("CARGO_PKG_VERSION"))
            }

            fn tools() -> ::std::vec::Vec<#krate::schema::mcp::Tool> {
                ::std::vec![#(#definitions),*]
            }

            async fn call_tool(
                &self,
                name: &str,
                arguments: ::core::option::Option<#krate::__private::JsonObject>,
                cx: &#krate::mcp::ToolCx,
            ) -> ::core::option::Option<
                ::core::result::Result<#krate::schema::mcp::CallToolResult, #krate::Error>,
            > {
                #[allow(unused_imports)]
                use #krate::__private::{AsIs as _, AsStructured as _, AsText as _};
                match name {
                    #(#arms)*
                    _ => ::core::option::Option::None,
                }
            }
        }
    }
}

/// `MyProxy` → `"my-proxy"`: the default name of a proxy's MCP server.
fn kebab_name(ty: &syn::Type) -> String {
    let ident = match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
    .unwrap_or_else(|| "tools".to_owned());
    let mut out = String::new();
    for (i, c) in ident.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `impl Proxy for T` / `impl Agent for T` with a rung per handler.
pub(crate) fn trait_impl(
    role: Role,
    krate: &Path,
    item: &ItemImpl,
    handlers: &[Handler],
    mcp_over_acp: bool,
    protocols: Option<&[u16]>,
) -> TokenStream {
    let (impl_generics, _, where_clause) = item.generics.split_for_impl();
    let self_ty = &item.self_ty;
    let (trait_path, module, cx) = match role {
        Role::Proxy => (
            quote!(#krate::proxy::Proxy),
            quote!(#krate::proxy),
            quote!(#krate::proxy::Cx),
        ),
        Role::Agent => (
            quote!(#krate::agent::Agent),
            quote!(#krate::agent),
            quote!(#krate::agent::Cx),
        ),
    };
    let routes: Vec<TokenStream> = handlers.iter().map(|h| route(krate, h)).collect();
    let takes = if routes.is_empty() {
        quote! {
            let _ = (method, from);
            false
        }
    } else {
        quote!(#(#routes::matches(method, from))||*)
    };
    let rungs = handlers
        .iter()
        .zip(&routes)
        .map(|(h, route)| rung(h, route));
    let mcp_over_acp = mcp_over_acp.then(|| {
        quote!(
            const MCP_OVER_ACP: bool = true;
        )
    });
    let protocols_list = protocols;
    let protocols = protocols.map(|list| {
        // v2 is behind the SDK's `unstable_protocol_v2` feature: without it this names
        // something that does not exist, and the error says which feature to turn on.
        let v2 = list.contains(&2).then(|| {
            quote!(
                let () = #krate::__private::protocol_v2_needs_the_sacp_feature_unstable_protocol_v2;
            )
        });
        quote!(
            const PROTOCOLS: &'static [u16] = {
                #v2
                &[#(#list),*]
            };
        )
    });
    let info = (role == Role::Agent).then(|| {
        quote!(
            const INFO: (&'static str, &'static str) = (
                ::core::env!("CARGO_PKG_NAME"),
                ::core::env!("CARGO_PKG_VERSION"),
            );
        )
    });
    let checks = version_checks(role, krate, item, handlers, &routes, protocols_list);
    quote! {
        #(#checks)*

        #[automatically_derived]
        impl #impl_generics #trait_path for #self_ty #where_clause {
            #mcp_over_acp
            #protocols
            #info

            fn takes(method: &str, from: #krate::acp::Side) -> bool {
                #takes
            }

            async fn dispatch(&self, message: #module::Incoming, cx: &#cx) {
                #(#rungs)*
                #krate::__private::unhandled(message, cx).await
            }
        }
    }
}

/// Each handler's message must be of a version the service speaks: checked at compile time
/// (a free constant is always evaluated; a generic impl's message types may name its
/// parameters, which a free constant cannot, so a generic impl gets none). The versions are
/// the macro's own (as written, or the default), not the impl's constant: a type that is no
/// proxy at all (not `Sync`, say) then gets its one error, not a second one here.
fn version_checks(
    role: Role,
    krate: &Path,
    item: &ItemImpl,
    handlers: &[Handler],
    routes: &[TokenStream],
    protocols: Option<&[u16]>,
) -> Vec<TokenStream> {
    if !item.generics.params.is_empty() {
        return Vec::new();
    }
    let spoken = match protocols {
        Some(list) => quote!(&[#(#list),*]),
        None => quote!(#krate::protocol::version::SPOKEN),
    };
    let who = match role {
        Role::Proxy => "proxy",
        Role::Agent => "agent",
    };
    let message = format!(
        "this handler takes a message of an ACP version the {who} does not declare: add \
         `protocol = 2` (a `sacp::acp::v2` type) or `protocol = [1, 2]` to its `#[sacp::{who}]`, \
         or take the message type of a version it speaks (`sacp::acp` is v1)"
    );
    handlers
        .iter()
        .zip(routes)
        .map(|(h, route)| {
            quote_spanned! {h.message.span()=>
                const _: () = ::core::assert!(
                    #krate::__private::speaks(#spoken, #route::VERSION),
                    #message
                );
            }
        })
        .collect()
}

/// `<T as RequestFromClient>` (or the trait for that kind and side), spanned at `T` so that a
/// type that is not an ACP message of that side is reported there.
fn route(krate: &Path, handler: &Handler) -> TokenStream {
    let ty = &handler.message;
    let kind = match handler.kind {
        MessageKind::Request => "Request",
        MessageKind::Notification => "Notification",
    };
    let side = match handler.from {
        Side::Client => "Client",
        Side::Agent => "Agent",
    };
    let support = format_ident!("{kind}From{side}");
    quote_spanned! {ty.span()=>
        <#ty as #krate::__private::#support>
    }
}

fn rung(handler: &Handler, route: &TokenStream) -> TokenStream {
    let name = &handler.name;
    // The call and its result carry the span of the handler's return type: a result that does
    // not fit the message is reported there.
    let result = format_ident!("result", span = handler.output_span);
    let call = quote_spanned! {handler.output_span=>
        let #result = Self::#name(self, message, cx).await;
    };
    // The rest carries the message type's span: if the type is wrong, every use of it reports
    // the same error at the same place, which the compiler shows once.
    let span = handler.message.span();
    match handler.kind {
        MessageKind::Request => quote_spanned! {span=>
            let message = match #route::take(message) {
                ::core::result::Result::Ok((message, reply)) => {
                    #call
                    return reply.answer(#result);
                }
                ::core::result::Result::Err(message) => message,
            };
        },
        MessageKind::Notification => quote_spanned! {span=>
            let message = match #route::take(message) {
                ::core::result::Result::Ok(message) => {
                    #call
                    return #route::finish(#result);
                }
                ::core::result::Result::Err(message) => message,
            };
        },
    }
}

#[cfg(test)]
mod tests {
    //! Expansion snapshots: each `tests/expand/<feature>.rs` is expanded and compared with
    //! `tests/expand/<feature>.expanded.rs`. Set `SACP_BLESS=1` to rewrite the expected files.

    use super::*;
    use std::path::Path as FsPath;

    fn expand_file(source: &str) -> String {
        let mut file = syn::parse_file(source).expect("snapshot input parses");
        for item in &mut file.items {
            let syn::Item::Impl(imp) = item else { continue };
            let Some(pos) = imp.attrs.iter().position(|a| {
                a.path()
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "proxy" || s.ident == "agent")
            }) else {
                continue;
            };
            let attr = imp.attrs.remove(pos);
            let role = match attr.path().segments.last().map(|s| s.ident.to_string()) {
                Some(name) if name == "agent" => Role::Agent,
                _ => Role::Proxy,
            };
            let args = match &attr.meta {
                syn::Meta::List(list) => list.tokens.clone(),
                _ => TokenStream::new(),
            };
            let output = service(role, args, quote!(#imp));
            let expanded: syn::File = syn::parse2(output).expect("expansion parses");
            *item = syn::Item::Verbatim(quote!(#expanded));
        }
        let file: syn::File = syn::parse2(quote!(#file)).expect("re-parses");
        prettyplease::unparse(&file)
    }

    #[test]
    fn expansions_match_their_snapshots() {
        let dir = FsPath::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
        let bless = std::env::var_os("SACP_BLESS").is_some();
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .expect("tests/expand exists")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|e| e == "rs")
                    && !p.to_string_lossy().ends_with(".expanded.rs")
            })
            .collect();
        inputs.sort();
        assert!(
            !inputs.is_empty(),
            "no snapshot inputs in {}",
            dir.display()
        );
        let mut stale = Vec::new();
        for input in inputs {
            let expected_path = input.with_extension("expanded.rs");
            let actual = expand_file(&std::fs::read_to_string(&input).unwrap());
            if bless {
                std::fs::write(&expected_path, &actual).unwrap();
                continue;
            }
            let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
            if expected != actual {
                eprintln!(
                    "--- {} differs; expected:\n{expected}\n--- actual:\n{actual}",
                    expected_path.display()
                );
                stale.push(expected_path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "stale expansion snapshots (rerun with SACP_BLESS=1 after checking the diff): {stale:?}"
        );
    }
}

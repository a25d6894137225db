//! syn post-passes over typify's output (plus the emitted unions), in this order:
//!
//! 1. [`absent_stays_absent`]: a field typify gave a default (`#[serde(default…)]`, schema
//!    defaults, optional arrays and maps) becomes an `Option`, so a message that omitted it is
//!    written back without it (no `"kind":"other"`, no `"http":false`, no lost `[]`/`{}`).
//! 2. [`lenient_fields`]: the schema's `x-deserialize-default-on-error`,
//!    `x-deserialize-default-on-null` and `x-deserialize-skip-invalid-items` hints, through
//!    `sacp_schema::lenient`.
//! 3. [`origins`]: every message type (a method's params or result) keeps the JSON it was read
//!    from, in a field serde skips (`origin: crate::Origin`), and implements `HasOrigin`.
//! 4. [`null_results`]: response types without required fields accept `"result": null`.
//! 5. [`constructors`]: `new(required fields…)` and a setter per optional field. (Fields serde
//!    skips are neither: they start as their default, in both passes.)
//! 6. [`integer_consts`]: named constants on integer newtypes made from constant unions.
//! 7. [`exact_numbers`]: schema `number`s are `serde_json::Number`, not `f64`, so `50` is
//!    written back as `50` (not `50.0`) and every value keeps its exact text.

use std::collections::{BTreeMap, BTreeSet};

use heck::ToShoutySnakeCase;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::Value;
use syn::punctuated::Punctuated;
use syn::{Attribute, Field, Fields, Item, ItemStruct, Meta, Token, Type, parse_quote};

use crate::emit_unions::ident;
use crate::passes::{Defs, required_of};

/// What the passes changed, for the log.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) optional_defaults: usize,
    pub(crate) lenient: usize,
    pub(crate) patches: usize,
    pub(crate) origins: usize,
    pub(crate) null_results: usize,
    pub(crate) constructors: usize,
}

pub(crate) fn run(
    file: &mut syn::File,
    defs: &Defs,
    responses: &BTreeSet<String>,
    messages: &BTreeSet<String>,
    integers: &[(String, String, i64)],
) -> Stats {
    exact_numbers(file);
    let stats = Stats {
        optional_defaults: absent_stays_absent(file),
        lenient: lenient_fields(file, defs),
        patches: crate::patches::patch_fields(file, defs),
        origins: origins(file, messages),
        null_results: null_results(file, responses),
        constructors: constructors(file, defs),
    };
    integer_consts(file, integers);
    stats
}

/// The serde arguments of a field or container, taken out of its attributes.
fn take_serde(attrs: &mut Vec<Attribute>) -> Vec<Meta> {
    let mut metas = Vec::new();
    attrs.retain(|a| {
        if !a.path().is_ident("serde") {
            return true;
        }
        if let Ok(list) = a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            metas.extend(list);
        }
        false
    });
    metas
}

fn put_serde(attrs: &mut Vec<Attribute>, metas: &[Meta]) {
    if !metas.is_empty() {
        attrs.push(parse_quote!(#[serde(#(#metas),*)]));
    }
}

fn meta_name(m: &Meta) -> String {
    m.path()
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn meta_str(metas: &[Meta], name: &str) -> Option<String> {
    metas.iter().find_map(|m| match m {
        Meta::NameValue(nv) if meta_name(m) == name => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn has_meta(metas: &[Meta], name: &str) -> bool {
    metas.iter().any(|m| meta_name(m) == name)
}

/// Whether serde skips the field (`#[serde(skip)]`): it is not on the wire.
fn is_skipped(f: &Field) -> bool {
    let mut attrs = f.attrs.clone();
    has_meta(&take_serde(&mut attrs), "skip")
}

/// `Some(T)` for `Option<T>` (however the path to `Option` is spelled).
fn option_inner(ty: &Type) -> Option<&Type> {
    generic_inner(ty, "Option")
}

/// `Some(T)` for `Patch<T>` (see `patches.rs`).
fn patch_inner(ty: &Type) -> Option<&Type> {
    generic_inner(ty, "Patch")
}

fn generic_inner<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

fn named_fields(s: &mut ItemStruct) -> Option<&mut Punctuated<Field, Token![,]>> {
    match &mut s.fields {
        Fields::Named(f) => Some(&mut f.named),
        _ => None,
    }
}

fn add_derive(attrs: &mut [Attribute], derive: &str) {
    for a in attrs.iter_mut() {
        if !a.path().is_ident("derive") {
            continue;
        }
        let Ok(mut list) = a.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
        else {
            continue;
        };
        if list
            .iter()
            .any(|p| p.segments.last().is_some_and(|s| s.ident == derive))
        {
            return;
        }
        list.push(syn::parse_str(derive).expect("derive path"));
        *a = parse_quote!(#[derive(#list)]);
        return;
    }
}

fn remove_derive(attrs: &mut [Attribute], derive: &str) {
    for a in attrs.iter_mut() {
        if !a.path().is_ident("derive") {
            continue;
        }
        let Ok(list) = a.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
        else {
            continue;
        };
        let kept: Punctuated<syn::Path, Token![,]> = list
            .into_iter()
            .filter(|p| p.segments.last().is_none_or(|s| s.ident != derive))
            .collect();
        *a = parse_quote!(#[derive(#kept)]);
    }
}

/// Pass 1: defaulted fields become `Option`s that are skipped when absent.
pub(crate) fn absent_stays_absent(file: &mut syn::File) -> usize {
    let mut n = 0;
    let mut changed = BTreeSet::new();
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        let name = s.ident.to_string();
        let Some(fields) = named_fields(s) else {
            continue;
        };
        for f in fields.iter_mut() {
            let mut metas = take_serde(&mut f.attrs);
            let default_fn = meta_str(&metas, "default").is_some();
            if has_meta(&metas, "default")
                && !has_meta(&metas, "flatten")
                && (default_fn || option_inner(&f.ty).is_none())
            {
                if option_inner(&f.ty).is_none() {
                    let ty = &f.ty;
                    f.ty = parse_quote!(::std::option::Option<#ty>);
                }
                metas.retain(|m| {
                    !matches!(meta_name(m).as_str(), "default" | "skip_serializing_if")
                });
                metas.push(parse_quote!(default));
                metas.push(parse_quote!(
                    skip_serializing_if = "::std::option::Option::is_none"
                ));
                changed.insert(name.clone());
                n += 1;
            }
            put_serde(&mut f.attrs, &metas);
        }
    }
    // typify's hand-written `Default` impls and `defaults` functions built the old field types.
    file.items.retain(|item| match item {
        Item::Impl(i) => {
            let is_default = i
                .trait_
                .as_ref()
                .is_some_and(|(_, p, _)| p.segments.last().is_some_and(|s| s.ident == "Default"));
            let target = match &*i.self_ty {
                Type::Path(p) => p
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            };
            !(is_default && changed.contains(&target))
        }
        Item::Mod(m) => m.ident != "defaults",
        _ => true,
    });
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        if !changed.contains(&s.ident.to_string()) {
            continue;
        }
        let all_optional =
            named_fields(s).is_some_and(|f| f.iter().all(|f| option_inner(&f.ty).is_some()));
        if all_optional {
            add_derive(&mut s.attrs, "Default");
        }
    }
    n
}

#[derive(Default, Clone, Copy)]
struct Hints {
    on_error: bool,
    on_null: bool,
    skip_items: bool,
}

/// Pass 2: the schema's leniency hints.
pub(crate) fn lenient_fields(file: &mut syn::File, defs: &Defs) -> usize {
    let mut wanted: BTreeMap<(String, String), Hints> = BTreeMap::new();
    for (def_name, def) in defs {
        let Some(props) = def.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for (prop, schema) in props {
            let flag = |k: &str| schema.get(k) == Some(&Value::Bool(true));
            let hints = Hints {
                on_error: flag("x-deserialize-default-on-error"),
                on_null: flag("x-deserialize-default-on-null"),
                skip_items: flag("x-deserialize-skip-invalid-items"),
            };
            if hints.on_error || hints.on_null || hints.skip_items {
                wanted.insert((ident(def_name).to_string(), prop.clone()), hints);
            }
        }
    }
    let mut n = 0;
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        let name = s.ident.to_string();
        let Some(fields) = named_fields(s) else {
            continue;
        };
        for f in fields.iter_mut() {
            let mut metas = take_serde(&mut f.attrs);
            let json_name = meta_str(&metas, "rename").unwrap_or_else(|| {
                f.ident
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            });
            if let Some(h) = wanted.get(&(name.clone(), json_name))
                && !has_meta(&metas, "deserialize_with")
            {
                let optional_vec = option_inner(&f.ty)
                    .and_then(|t| generic_inner(t, "Vec"))
                    .is_some();
                let vec = generic_inner(&f.ty, "Vec").is_some();
                let helper = match (h.skip_items, optional_vec, vec, h.on_error) {
                    (true, true, _, false) => "skip_invalid_items_opt",
                    (true, true, _, true) => "skip_invalid_items_opt_or_default",
                    (true, false, true, false) => "skip_invalid_items",
                    (true, false, true, true) => "skip_invalid_items_or_default",
                    _ if h.on_error => "default_on_error",
                    _ => "default_on_null",
                };
                let path = format!("crate::lenient::{helper}");
                if !has_meta(&metas, "default") {
                    metas.push(parse_quote!(default));
                }
                metas.push(parse_quote!(deserialize_with = #path));
                n += 1;
            }
            put_serde(&mut f.attrs, &metas);
        }
    }
    n
}

/// Pass 3: message types keep where they came from. Each struct in `messages` (the params and
/// results of the protocol's methods) gets `#[serde(skip)] pub origin: crate::Origin` and an
/// `impl crate::HasOrigin`.
pub(crate) fn origins(file: &mut syn::File, messages: &BTreeSet<String>) -> usize {
    let mut impls = Vec::new();
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        let name = s.ident.to_string();
        if !messages.contains(&name) {
            continue;
        }
        let Some(fields) = named_fields(s) else {
            continue;
        };
        assert!(
            !fields
                .iter()
                .any(|f| f.ident.as_ref().is_some_and(|i| i == "origin")),
            "{name} has a field `origin` of its own: the origin field needs another name"
        );
        fields.push(parse_quote! {
            /// The JSON this message was read from, when it was received (never serialized):
            /// what a handler does not change is sent on exactly as it came. See
            /// [`Origin`](crate::Origin).
            #[serde(skip)]
            pub origin: crate::Origin
        });
        let ty = &s.ident;
        impls.push(quote! {
            impl crate::HasOrigin for #ty {
                fn origin(&self) -> &crate::Origin {
                    &self.origin
                }
                fn origin_mut(&mut self) -> &mut crate::Origin {
                    &mut self.origin
                }
            }
        });
    }
    let n = impls.len();
    let extra: syn::File = syn::parse2(quote!(#(#impls)*)).expect("origin impls parse");
    file.items.extend(extra.items);
    // The message types with no named fields to keep an origin in.
    let with_origin: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Impl(imp)
                if quote!(#imp)
                    .to_string()
                    .starts_with("impl crate :: HasOrigin for") =>
            {
                match &*imp.self_ty {
                    Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    let missing: BTreeSet<String> = messages
        .iter()
        .filter(|m| !with_origin.contains(*m))
        .cloned()
        .collect();
    n + crate::wrapped::give_origins(file, &missing, &with_origin)
}

/// Pass 4: response types with no required field accept `null` (ACP peers answer empty
/// responses with `"result": null`). The derived `Deserialize` moves to a hidden mirror struct;
/// the type's own impl reads `null` or the mirror.
pub(crate) fn null_results(file: &mut syn::File, responses: &BTreeSet<String>) -> usize {
    let mut added = Vec::new();
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        let name = s.ident.to_string();
        if !responses.contains(&name) {
            continue;
        }
        let Fields::Named(fields) = &s.fields else {
            continue;
        };
        if !fields
            .named
            .iter()
            .all(|f| option_inner(&f.ty).is_some() || is_skipped(f))
        {
            continue;
        }
        let field_names: Vec<Ident> = fields
            .named
            .iter()
            .filter(|f| !is_skipped(f))
            .filter_map(|f| f.ident.clone())
            .collect();
        let skipped: Vec<Ident> = fields
            .named
            .iter()
            .filter(|f| is_skipped(f))
            .filter_map(|f| f.ident.clone())
            .collect();
        let ty = s.ident.clone();
        let wire = Ident::new(&format!("__{name}Wire"), Span::call_site());
        let mut mirror = s.clone();
        mirror.ident = wire.clone();
        mirror.vis = syn::Visibility::Inherited;
        mirror.attrs.retain(|a| a.path().is_ident("serde"));
        mirror
            .attrs
            .insert(0, parse_quote!(#[derive(::serde::Deserialize)]));
        if let Some(mirrored) = named_fields(&mut mirror) {
            *mirrored = std::mem::take(mirrored)
                .into_iter()
                .filter(|f| !is_skipped(f))
                .collect();
        }
        for f in named_fields(&mut mirror).into_iter().flatten() {
            f.attrs.retain(|a| a.path().is_ident("serde"));
            f.vis = syn::Visibility::Inherited;
        }
        added.push(quote! {
            #mirror
            impl<'de> ::serde::Deserialize<'de> for #ty {
                fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                    let wire: ::std::option::Option<#wire> = ::serde::Deserialize::deserialize(d)?;
                    Ok(match wire {
                        Some(w) => Self {
                            #(#field_names: w.#field_names,)*
                            #(#skipped: ::std::default::Default::default(),)*
                        },
                        None => Self {
                            #(#field_names: ::std::option::Option::None,)*
                            #(#skipped: ::std::default::Default::default(),)*
                        },
                    })
                }
            }
        });
        remove_derive(&mut s.attrs, "Deserialize");
    }
    let n = added.len();
    for tokens in added {
        let extra: syn::File = syn::parse2(tokens).expect("null-result impl parses");
        file.items.extend(extra.items);
    }
    n
}

/// Pass 5: `new(required…)` (arguments in the schema's `required` order) and a builder-style
/// setter per optional field; fields serde skips start as their default.
pub(crate) fn constructors(file: &mut syn::File, defs: &Defs) -> usize {
    let required_order: BTreeMap<String, Vec<String>> = defs
        .iter()
        .filter_map(|(name, d)| Some((ident(name).to_string(), required_of(d.as_object()?))))
        .collect();
    let mut impls = Vec::new();
    for item in &file.items {
        let Item::Struct(s) = item else { continue };
        if !matches!(s.vis, syn::Visibility::Public(_)) || s.ident.to_string().starts_with("__") {
            continue;
        }
        let Fields::Named(fields) = &s.fields else {
            continue;
        };
        let ty = &s.ident;
        let skipped: Vec<&Ident> = fields
            .named
            .iter()
            .filter(|f| is_skipped(f))
            .filter_map(|f| f.ident.as_ref())
            .collect();
        let (mut required, optional): (Vec<&Field>, Vec<&Field>) = fields
            .named
            .iter()
            .filter(|f| !is_skipped(f))
            .partition(|f| option_inner(&f.ty).is_none() && patch_inner(&f.ty).is_none());
        if let Some(order) = required_order.get(&ty.to_string()) {
            let position = |f: &Field| {
                let mut attrs = f.attrs.clone();
                let json = meta_str(&take_serde(&mut attrs), "rename").unwrap_or_else(|| {
                    f.ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                });
                order.iter().position(|r| *r == json).unwrap_or(usize::MAX)
            };
            required.sort_by_key(|f| position(f));
        }
        let req_names: Vec<&Ident> = required.iter().filter_map(|f| f.ident.as_ref()).collect();
        let req_types: Vec<&Type> = required.iter().map(|f| &f.ty).collect();
        let opt_names: Vec<&Ident> = optional.iter().filter_map(|f| f.ident.as_ref()).collect();
        let unset: Vec<TokenStream> = optional
            .iter()
            .map(|f| match patch_inner(&f.ty) {
                Some(_) => quote!(crate::Patch::Absent),
                None => quote!(::std::option::Option::None),
            })
            .collect();
        let setters = optional.iter().map(|f| setter(f));
        let new_doc = if req_names.is_empty() {
            format!(" A `{ty}` with every optional field unset.")
        } else {
            format!(" A `{ty}` from its required fields; optional fields start unset.")
        };
        impls.push(quote! {
            impl #ty {
                #[doc = #new_doc]
                #[allow(clippy::too_many_arguments)]
                pub fn new(#(#req_names: impl ::std::convert::Into<#req_types>),*) -> Self {
                    Self {
                        #(#req_names: #req_names.into(),)*
                        #(#opt_names: #unset,)*
                        #(#skipped: ::std::default::Default::default(),)*
                    }
                }
                #(#setters)*
            }
        });
    }
    let n = impls.len();
    let extra: syn::File = syn::parse2(quote!(#(#impls)*)).expect("constructors parse");
    file.items.extend(extra.items);
    n
}

/// The setter of an optional field (with `clear_…` for a patch field).
fn setter(f: &Field) -> TokenStream {
    let name = f.ident.as_ref().expect("named field");
    let field = name.to_string().trim_start_matches("r#").to_owned();
    let doc = format!(" Sets `{field}`.");
    if let Some(inner) = patch_inner(&f.ty) {
        // A patch field: a value, or `null` with `clear_…` (absent is what `new` left).
        let clear = Ident::new(&format!("clear_{field}"), Span::call_site());
        let clear_doc = format!(" Sets `{field}` to `null`: the receiver clears it.");
        return quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #name(mut self, value: impl ::std::convert::Into<#inner>) -> Self {
                self.#name = crate::Patch::Value(value.into());
                self
            }
            #[doc = #clear_doc]
            #[must_use]
            pub fn #clear(mut self) -> Self {
                self.#name = crate::Patch::Null;
                self
            }
        };
    }
    let inner = option_inner(&f.ty).expect("optional field");
    quote! {
        #[doc = #doc]
        #[must_use]
        pub fn #name(mut self, value: impl ::std::convert::Into<#inner>) -> Self {
            self.#name = ::std::option::Option::Some(value.into());
            self
        }
    }
}

/// Pass 6 (run first): every `f64` in a struct field or newtype becomes `serde_json::Number`.
pub(crate) fn exact_numbers(file: &mut syn::File) -> usize {
    struct Numbers(usize);
    impl syn::visit_mut::VisitMut for Numbers {
        fn visit_type_mut(&mut self, ty: &mut Type) {
            if let Type::Path(p) = ty
                && p.qself.is_none()
                && p.path.is_ident("f64")
            {
                *ty = parse_quote!(::serde_json::Number);
                self.0 += 1;
                return;
            }
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
    let mut numbers = Numbers(0);
    for item in &mut file.items {
        if let Item::Struct(s) = item {
            syn::visit_mut::VisitMut::visit_item_struct_mut(&mut numbers, s);
        }
    }
    numbers.0
}

/// Pass 5: `impl ErrorCode { pub const PARSE_ERROR: Self = Self(-32700); … }`.
pub(crate) fn integer_consts(file: &mut syn::File, consts: &[(String, String, i64)]) {
    let mut by_type: BTreeMap<&str, Vec<TokenStream>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (def, title, value) in consts {
        let name = title.to_shouty_snake_case();
        if name.is_empty() || !seen.insert((def.clone(), name.clone())) {
            continue;
        }
        let name = Ident::new(&name, Span::call_site());
        let doc = format!(" {title} (`{value}`).");
        let lit = proc_macro2::Literal::i64_unsuffixed(*value);
        by_type
            .entry(def)
            .or_default()
            .push(quote! { #[doc = #doc] pub const #name: Self = Self(#lit); });
    }
    for (def, items) in by_type {
        let ty = ident(def);
        let extra: syn::File =
            syn::parse2(quote! { impl #ty { #(#items)* } }).expect("consts parse");
        file.items.extend(extra.items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(code: &str) -> syn::File {
        syn::parse_str(code).unwrap()
    }

    fn text(f: &syn::File) -> String {
        prettyplease::unparse(f)
    }

    #[test]
    fn defaulted_fields_become_options_and_defaults_go() {
        let mut f = file(
            r#"
            #[derive(Clone, Debug)]
            pub struct Caps {
                #[serde(default)]
                pub http: bool,
                #[serde(rename = "fs", default = "defaults::caps_fs")]
                pub fs: Fs,
                #[serde(default, skip_serializing_if = "::std::vec::Vec::is_empty")]
                pub list: ::std::vec::Vec<u8>,
                #[serde(skip_serializing_if = "::std::option::Option::is_none")]
                pub meta: ::std::option::Option<u8>,
                #[serde(default = "defaults::caps_props")]
                pub props: ::std::option::Option<u8>,
            }
            impl ::std::default::Default for Caps { fn default() -> Self { Caps::base() } }
            pub mod defaults { pub(super) fn caps_fs() -> super::Fs { super::Fs::base() } }
        "#,
        );
        assert_eq!(absent_stays_absent(&mut f), 4);
        let t = text(&f);
        assert!(t.contains("pub http: ::std::option::Option<bool>"), "{t}");
        assert!(
            t.contains("pub fs: ::std::option::Option<Fs>") && t.contains(r#"rename = "fs""#),
            "{t}"
        );
        assert!(!t.contains("defaults::caps_fs"), "{t}");
        assert!(t.contains("Option<::std::vec::Vec<u8>>"), "{t}");
        assert!(
            !t.contains("mod defaults") && !t.contains("impl ::std::default::Default"),
            "{t}"
        );
        assert!(t.contains("#[derive(Clone, Debug, Default)]"), "{t}");
    }

    #[test]
    fn hints_pick_the_right_helper() {
        let mut f = file(
            r#"
            pub struct A {
                #[serde(rename = "_meta", skip_serializing_if = "::std::option::Option::is_none")]
                pub meta: ::std::option::Option<u8>,
                #[serde(default, skip_serializing_if = "::std::option::Option::is_none")]
                pub items: ::std::option::Option<::std::vec::Vec<u8>>,
                pub list: ::std::vec::Vec<u8>,
                pub plain: u8,
            }
        "#,
        );
        let defs = serde_json::json!({"A": {"properties": {
            "_meta": {"x-deserialize-default-on-error": true},
            "items": {"x-deserialize-skip-invalid-items": true},
            "list": {"x-deserialize-default-on-null": true}}}});
        assert_eq!(lenient_fields(&mut f, defs.as_object().unwrap()), 3);
        let t = text(&f);
        assert!(
            t.contains(r#"deserialize_with = "crate::lenient::default_on_error""#),
            "{t}"
        );
        assert!(
            t.contains(r#"deserialize_with = "crate::lenient::skip_invalid_items_opt""#),
            "{t}"
        );
        assert!(
            t.contains(
                r#"#[serde(default, deserialize_with = "crate::lenient::default_on_null")]"#
            ),
            "{t}"
        );
    }

    #[test]
    fn empty_responses_read_null() {
        let mut f = file(
            r#"
            #[derive(::serde::Deserialize, ::serde::Serialize, Clone)]
            pub struct WriteResponse {
                #[serde(rename = "_meta", default, skip_serializing_if = "::std::option::Option::is_none")]
                pub meta: ::std::option::Option<u8>,
            }
        "#,
        );
        let responses = BTreeSet::from(["WriteResponse".to_owned()]);
        assert_eq!(null_results(&mut f, &responses), 1);
        let t = text(&f);
        assert!(
            t.contains("#[derive(::serde::Serialize, Clone)]\npub struct WriteResponse"),
            "{t}"
        );
        assert!(t.contains("struct __WriteResponseWire"), "{t}");
        assert!(
            t.contains("impl<'de> ::serde::Deserialize<'de> for WriteResponse"),
            "{t}"
        );
    }

    #[test]
    fn constructors_take_required_fields_and_set_optional_ones() {
        let mut f = file(
            r#"pub struct P { pub id: String, pub n: ::std::option::Option<u8>, #[serde(rename = "aFirst")] pub a_first: u8 }"#,
        );
        let defs = serde_json::json!({"P": {"required": ["id", "aFirst"]}});
        assert_eq!(constructors(&mut f, defs.as_object().unwrap()), 1);
        let t = text(&f);
        assert!(
            t.contains("id: impl ::std::convert::Into<String>,\n        a_first: impl"),
            "schema order, not field order: {t}"
        );
        assert!(
            t.contains("pub fn n(mut self, value: impl ::std::convert::Into<u8>) -> Self"),
            "{t}"
        );
    }

    #[test]
    fn numbers_keep_their_text() {
        let mut f = file(
            "pub struct P { pub a: f64, pub b: ::std::option::Option<f64>, pub c: i64 } pub struct N(pub f64);",
        );
        assert_eq!(exact_numbers(&mut f), 3);
        let t = text(&f);
        assert!(
            t.contains("pub b: ::std::option::Option<::serde_json::Number>")
                && t.contains("pub c: i64"),
            "{t}"
        );
    }

    #[test]
    fn integer_constants_are_named() {
        let mut f = file("pub struct ErrorCode(pub i32);");
        integer_consts(
            &mut f,
            &[("ErrorCode".into(), "Parse error".into(), -32700)],
        );
        assert!(
            text(&f).contains("pub const PARSE_ERROR: Self = Self(-32700);"),
            "{}",
            text(&f)
        );
    }
}

//! Origins for message types that are not structs with named fields.
//!
//! [`crate::post::origins`] gives every message type (a method's params or result) an `origin`
//! field. A few message types have no named fields to add it to — the unstable schema's
//! envelopes: `proxy/initialize` (the same params and result as `initialize`), the result of
//! `proxy/successor` (any JSON) and of `mcp/message` (an untagged union). Here:
//!
//! - a transparent newtype of a message type keeps its origin in that type: `HasOrigin`
//!   delegates to it (`InitializeProxyRequest(InitializeRequest)`);
//! - any other such type `X` is renamed `XBody`, with the impls typify wrote for it, and `X`
//!   becomes a transparent struct of the body and an origin (with `Deref` to the body and
//!   `From` it), so that it is as lossless as the rest and every reference to `X` stays valid.

use std::collections::BTreeSet;

use proc_macro2::Ident;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::{Fields, Item, Type};

/// Gives the message types among `file`'s items that `origins` could not handle (their names
/// in `missing`) an origin; returns how many.
pub(crate) fn give_origins(
    file: &mut syn::File,
    missing: &BTreeSet<String>,
    with_origin: &BTreeSet<String>,
) -> usize {
    let mut added: Vec<Item> = Vec::new();
    let mut renamed: Vec<(Ident, Ident)> = Vec::new();
    let mut handled = 0;
    for item in &file.items {
        let name = match item {
            Item::Struct(s) => s.ident.clone(),
            Item::Enum(e) => e.ident.clone(),
            _ => continue,
        };
        if !missing.contains(&name.to_string()) {
            continue;
        }
        handled += 1;
        if newtype_of(item).is_some_and(|inner| with_origin.contains(&inner.to_string())) {
            added.push(syn::parse_quote! {
                impl crate::HasOrigin for #name {
                    fn origin(&self) -> &crate::Origin {
                        crate::HasOrigin::origin(&self.0)
                    }
                    fn origin_mut(&mut self) -> &mut crate::Origin {
                        crate::HasOrigin::origin_mut(&mut self.0)
                    }
                }
            });
            continue;
        }
        let body = format_ident!("{name}Body");
        let wrapper: syn::File = syn::parse2(quote! {
            #[derive(::serde::Deserialize, ::serde::Serialize, Clone, Debug, PartialEq)]
            #[serde(transparent)]
            pub struct #name {
                /// The message itself.
                pub body: #body,
                /// The JSON this message was read from, when it was received (never
                /// serialized): what a handler does not change is sent on exactly as it came.
                /// See [`Origin`](crate::Origin).
                #[serde(skip)]
                pub origin: crate::Origin,
            }
            impl ::std::ops::Deref for #name {
                type Target = #body;
                fn deref(&self) -> &#body {
                    &self.body
                }
            }
            impl ::std::ops::DerefMut for #name {
                fn deref_mut(&mut self) -> &mut #body {
                    &mut self.body
                }
            }
            impl ::std::convert::From<#body> for #name {
                fn from(body: #body) -> Self {
                    #name { body, origin: crate::Origin::default() }
                }
            }
            impl crate::HasOrigin for #name {
                fn origin(&self) -> &crate::Origin {
                    &self.origin
                }
                fn origin_mut(&mut self) -> &mut crate::Origin {
                    &mut self.origin
                }
            }
        })
        .expect("the wrapper parses");
        added.extend(wrapper.items);
        renamed.push((name, body));
    }
    let local: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Struct(s) => Some(s.ident.to_string()),
            Item::Enum(e) => Some(e.ident.to_string()),
            Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect();
    for (old, new) in &renamed {
        for item in &mut file.items {
            rename_own(item, old, new, &local);
        }
    }
    file.items.extend(added);
    handled
}

/// The inner type of a one-field tuple struct, when it is a plain name.
fn newtype_of(item: &Item) -> Option<Ident> {
    let Item::Struct(s) = item else { return None };
    let Fields::Unnamed(fields) = &s.fields else {
        return None;
    };
    let [field] = fields.unnamed.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    match &field.ty {
        Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.clone())
        }
        _ => None,
    }
}

/// Renames `old` to `new` in the item that defines `old` and in the impls written for it: on
/// it, or on a type of another crate with `old` in the trait (`From<old> for Value`). Other
/// items, the file's own types' conversions from `old` included, keep naming `old`: the
/// wrapper.
fn rename_own(item: &mut Item, old: &Ident, new: &Ident, local: &BTreeSet<String>) {
    let own = match item {
        Item::Struct(s) => s.ident == *old,
        Item::Enum(e) => e.ident == *old,
        Item::Impl(imp) => {
            let names = |ty: &mut dyn FnMut(&mut Names<'_>)| {
                let mut names = Names {
                    name: old,
                    found: false,
                };
                ty(&mut names);
                names.found
            };
            let on_it = names(&mut |n| n.visit_type_mut(&mut imp.self_ty.clone()));
            let foreign = match &*imp.self_ty {
                Type::Path(p) => p
                    .path
                    .segments
                    .last()
                    .is_none_or(|s| !local.contains(&s.ident.to_string())),
                _ => true,
            };
            let in_trait = imp
                .trait_
                .as_ref()
                .is_some_and(|(_, path, _)| names(&mut |n| n.visit_path_mut(&mut path.clone())));
            on_it || (foreign && in_trait)
        }
        _ => false,
    };
    if own {
        Rename { old, new }.visit_item_mut(item);
    }
}

struct Names<'a> {
    name: &'a Ident,
    found: bool,
}

impl VisitMut for Names<'_> {
    fn visit_ident_mut(&mut self, ident: &mut Ident) {
        self.found |= ident == self.name;
    }
}

struct Rename<'a> {
    old: &'a Ident,
    new: &'a Ident,
}

impl VisitMut for Rename<'_> {
    fn visit_ident_mut(&mut self, ident: &mut Ident) {
        if ident == self.old {
            *ident = self.new.clone();
        }
    }
}

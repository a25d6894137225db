//! The unstable schemas against their stable twins.
//!
//! With its `unstable` feature, `sacp-schema`'s `acp::v1` (and `acp::v2`) is what the unstable
//! schema defines instead of the stable one: the same module, the same type names, so one
//! typed value serves both and a user who turns the feature on keeps every type, field and
//! constructor the stable build had. That only holds while the unstable output is a strict
//! superset of the stable one, which [`compare`] checks on the generated code itself (before
//! the two are merged into one file, [`crate::merge`]):
//!
//! - every stable item exists in the unstable output under the same name and kind;
//! - a struct keeps each stable field with the same type and serde attributes (it may gain
//!   fields);
//! - an enum keeps each stable variant as it was (it may gain variants);
//! - a type alias, tuple struct or constant is the same;
//! - every stable inherent method (`new`, the setters, …) keeps its signature.
//!
//! Anything else is a difference a user would trip over, and fails generation with the list.
//! What was added is written to `generated/unstable.md`, which `sacp-schema` shows in its docs
//! under the feature.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use quote::ToTokens;
use syn::{Attribute, Fields, ImplItem, Item};

/// What the unstable output adds to one stable module.
#[derive(Debug, Default)]
pub(crate) struct Additions {
    /// Types that only the unstable schema has.
    pub(crate) types: Vec<String>,
    /// `(type, field)` added to a stable struct.
    pub(crate) fields: Vec<(String, String)>,
    /// `(enum, variant)` added to a stable enum.
    pub(crate) variants: Vec<(String, String)>,
}

/// One item, reduced to what a user's code depends on (docs left out).
enum Shape {
    /// Named fields: name → the field's attributes and type.
    Struct(BTreeMap<String, String>),
    /// Variants: name → the whole variant.
    Enum(BTreeMap<String, String>),
    /// Anything else, whole.
    Other(String),
}

fn without_docs(attrs: &mut Vec<Attribute>) {
    attrs.retain(|a| !a.path().is_ident("doc"));
}

fn tokens(item: &impl ToTokens) -> String {
    item.to_token_stream().to_string()
}

/// The named items of a file, and the signatures of their inherent methods.
fn shapes(file: &syn::File) -> (BTreeMap<String, Shape>, BTreeMap<String, String>) {
    let mut items = BTreeMap::new();
    let mut methods = BTreeMap::new();
    for item in &file.items {
        match item.clone() {
            Item::Struct(mut s) => {
                let name = s.ident.to_string();
                let shape = match &mut s.fields {
                    Fields::Named(named) => Shape::Struct(
                        named
                            .named
                            .iter_mut()
                            .map(|f| {
                                without_docs(&mut f.attrs);
                                let name = f.ident.as_ref().map(ToString::to_string);
                                (name.unwrap_or_default(), tokens(f))
                            })
                            .collect(),
                    ),
                    _ => {
                        without_docs(&mut s.attrs);
                        Shape::Other(tokens(&s))
                    }
                };
                items.insert(name, shape);
            }
            Item::Enum(mut e) => {
                let variants = e
                    .variants
                    .iter_mut()
                    .map(|v| {
                        without_docs(&mut v.attrs);
                        if let Fields::Named(named) = &mut v.fields {
                            named
                                .named
                                .iter_mut()
                                .for_each(|f| without_docs(&mut f.attrs));
                        }
                        (v.ident.to_string(), tokens(v))
                    })
                    .collect();
                items.insert(e.ident.to_string(), Shape::Enum(variants));
            }
            Item::Type(mut t) => {
                without_docs(&mut t.attrs);
                items.insert(t.ident.to_string(), Shape::Other(tokens(&t)));
            }
            Item::Const(mut c) => {
                without_docs(&mut c.attrs);
                items.insert(c.ident.to_string(), Shape::Other(tokens(&c)));
            }
            Item::Impl(imp) if imp.trait_.is_none() => {
                let owner = tokens(&imp.self_ty);
                for inner in imp.items {
                    if let ImplItem::Fn(f) = inner {
                        methods.insert(format!("{owner}::{}", f.sig.ident), tokens(&f.sig));
                    }
                }
            }
            _ => {}
        }
    }
    (items, methods)
}

/// Compares the unstable output with its stable twin: the additions, or every difference
/// that is not one.
pub(crate) fn compare(stable: &syn::File, unstable: &syn::File) -> Result<Additions, Vec<String>> {
    let (stable_items, stable_methods) = shapes(stable);
    let (unstable_items, unstable_methods) = shapes(unstable);
    let mut additions = Additions::default();
    let mut problems = Vec::new();
    for (name, shape) in &stable_items {
        let Some(twin) = unstable_items.get(name) else {
            problems.push(format!("{name} is missing"));
            continue;
        };
        match (shape, twin) {
            (Shape::Struct(old), Shape::Struct(new)) => diff_members(
                name,
                "field",
                old,
                new,
                &mut problems,
                &mut additions.fields,
            ),
            (Shape::Enum(old), Shape::Enum(new)) => diff_members(
                name,
                "variant",
                old,
                new,
                &mut problems,
                &mut additions.variants,
            ),
            (Shape::Other(old), Shape::Other(new)) if old == new => {}
            _ => problems.push(format!("{name} changed its shape")),
        }
    }
    for (method, signature) in &stable_methods {
        match unstable_methods.get(method) {
            Some(twin) if twin == signature => {}
            Some(twin) => problems.push(format!("{method} changed: `{signature}` → `{twin}`")),
            None => problems.push(format!("{method} is missing")),
        }
    }
    additions.types = unstable_items
        .keys()
        .filter(|name| !stable_items.contains_key(*name) && !name.starts_with("__"))
        .cloned()
        .collect();
    if problems.is_empty() {
        Ok(additions)
    } else {
        Err(problems)
    }
}

fn diff_members(
    owner: &str,
    what: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    problems: &mut Vec<String>,
    added: &mut Vec<(String, String)>,
) {
    for (member, text) in old {
        match new.get(member) {
            Some(twin) if twin == text => {}
            Some(twin) => problems.push(format!("{owner}: {what} `{text}` became `{twin}`")),
            None => problems.push(format!("{owner}: {what} {member} is missing")),
        }
    }
    added.extend(
        new.keys()
            .filter(|m| !old.contains_key(*m))
            .map(|m| (owner.to_owned(), m.clone())),
    );
}

/// The additions of each module, as the Markdown `sacp-schema` shows under its `unstable`
/// feature.
pub(crate) fn render(modules: &[(&str, &str, Additions)]) -> String {
    let mut out = String::from(
        "<!-- @generated by cargo xtask regen-schema. Do not edit. -->\n\
         ## What the `unstable` feature adds\n\n\
         With `unstable`, `acp::v1` and `acp::v2` are what ACP's unstable schemas \
         (`schema.unstable.json`) define instead of the stable ones. The stable types stay as they \
         are — same names, fields, variants and constructors (`cargo xtask regen-schema` \
         checks it) — and gain what is listed here. Code that matches one of the enums below \
         exhaustively, without a `_` arm, needs one for the new variants.\n",
    );
    for (module, schema, additions) in modules {
        let _ = write!(out, "\n### `{module}` (from `{schema}`)\n\n");
        let _ = writeln!(out, "New types: {}.\n", join(additions.types.iter()));
        let _ = writeln!(out, "New fields of stable types:\n");
        for (owner, members) in grouped(&additions.fields) {
            let _ = writeln!(out, "- `{owner}`: {}", join(members.iter()));
        }
        let _ = writeln!(out, "\nNew variants of stable enums:\n");
        for (owner, members) in grouped(&additions.variants) {
            let _ = writeln!(out, "- `{owner}`: {}", join(members.iter()));
        }
    }
    out
}

fn grouped(pairs: &[(String, String)]) -> BTreeMap<&str, Vec<&str>> {
    let mut map: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (owner, member) in pairs {
        map.entry(owner).or_default().push(member);
    }
    map
}

fn join<S: AsRef<str>>(names: impl Iterator<Item = S>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{}`", n.as_ref())).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> syn::File {
        syn::parse_str(text).unwrap()
    }

    #[test]
    fn added_fields_variants_and_types_are_additions() {
        let stable = file(
            "pub struct A { #[serde(rename = \"x\")] pub x: u8 }
             pub enum E { One, Two(u8) }
             impl A { pub fn new(x: u8) -> Self { A { x } } }",
        );
        let unstable = file(
            "/// docs differ, which is fine
             pub struct A { /** new docs */ #[serde(rename = \"x\")] pub x: u8, pub y: Option<u8> }
             pub enum E { One, Two(u8), Three }
             pub struct B;
             impl A { pub fn new(x: u8) -> Self { A { x, y: None } } pub fn y(self) -> Self { self } }",
        );
        let added = compare(&stable, &unstable).unwrap();
        assert_eq!(added.types, ["B"]);
        assert_eq!(added.fields, [("A".to_owned(), "y".to_owned())]);
        assert_eq!(added.variants, [("E".to_owned(), "Three".to_owned())]);
    }

    #[test]
    fn a_changed_field_a_lost_variant_and_a_new_constructor_argument_are_refused() {
        let stable = file(
            "pub struct A { pub x: u8 }
             pub enum E { One, Two }
             impl A { pub fn new(x: u8) -> Self { A { x } } }",
        );
        let unstable = file(
            "pub struct A { pub x: u16 }
             pub enum E { One }
             impl A { pub fn new(x: u16, y: u8) -> Self { A { x } } }",
        );
        let problems = compare(&stable, &unstable).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("A: field"), "{problems:?}");
        assert!(
            problems[1].contains("E: variant Two is missing"),
            "{problems:?}"
        );
        assert!(
            problems[2].contains("A :: new changed") || problems[2].contains("A::new changed"),
            "{problems:?}"
        );
    }
}

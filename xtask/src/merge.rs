//! One generated file per protocol version: the stable output and its unstable twin merged,
//! what only the unstable schema has under `#[cfg(feature = "unstable")]`.
//!
//! The unstable output is a superset of the stable one ([`crate::twins`] checks it first), so
//! most items are the same in both and are written once. The rest is merged as finely as Rust
//! lets a `cfg` go, so that neither build can drift from its schema:
//!
//! - an item only the unstable output has gets `#[cfg(feature = "unstable")]` (and one only
//!   the stable output has, `#[cfg(not(feature = "unstable"))]`);
//! - a struct or an enum whose stable fields or variants are the same, in the same order, is
//!   written once with the added fields or variants under the feature;
//! - an `impl` block or a module whose header is the same is written once, its members merged
//!   the same way (a method whose body differs, such as a constructor that sets a new field,
//!   is written twice, once per build);
//! - where only the docs differ, each build gets its own (`cfg_attr(…, doc = …)`);
//! - anything else that differs (a constant array, a macro) is written twice, once per build.
//!
//! Built with the feature, a merged file must give exactly the unstable output's items, and
//! without it exactly the stable output's: [`strip`] applies the `cfg`s, and generation fails
//! when either build differs from its own output.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Fields, ImplItem, Item};

/// How the items of two outputs merged, for the generator's report.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stats {
    /// Items written once, the same in both.
    pub(crate) same: usize,
    /// Items written once, with members or docs of one build only.
    pub(crate) merged: usize,
    /// Items (or members) written twice, once per build.
    pub(crate) twice: usize,
    /// Items of the unstable build only.
    pub(crate) added: usize,
}

/// Which build an attribute limits something to.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Build {
    Stable,
    Unstable,
}

impl Build {
    fn cfg(self) -> TokenStream {
        match self {
            Build::Stable => quote!(not(feature = "unstable")),
            Build::Unstable => quote!(feature = "unstable"),
        }
    }

    fn attr(self) -> Attribute {
        let cfg = self.cfg();
        syn::parse_quote!(#[cfg(#cfg)])
    }
}

/// Merges `stable` and `unstable`, the two outputs of one protocol version.
pub(crate) fn merge(
    stable: &syn::File,
    unstable: &syn::File,
) -> Result<(syn::File, Stats), String> {
    let mut stats = Stats::default();
    let items = merge_items(&stable.items, &unstable.items, &mut stats);
    let merged = syn::File {
        shebang: None,
        attrs: unstable.attrs.clone(),
        items,
    };
    for (build, want) in [(Build::Stable, stable), (Build::Unstable, unstable)] {
        let got = strip(&merged, build);
        if let Some(difference) = first_difference(&got, want) {
            return Err(format!(
                "the merged file, built {}, is not the {} output: {difference}",
                match build {
                    Build::Stable => "without `unstable`",
                    Build::Unstable => "with `unstable`",
                },
                match build {
                    Build::Stable => "stable",
                    Build::Unstable => "unstable",
                }
            ));
        }
    }
    Ok((merged, stats))
}

fn tokens(item: &impl ToTokens) -> String {
    item.to_token_stream().to_string()
}

/// The name an item is paired by with its twin: its kind and name, an `impl` by its header.
fn item_key(item: &Item) -> String {
    match item {
        Item::Struct(s) => format!("struct {}", s.ident),
        Item::Enum(e) => format!("enum {}", e.ident),
        Item::Type(t) => format!("type {}", t.ident),
        Item::Const(c) => format!("const {}", c.ident),
        Item::Static(s) => format!("static {}", s.ident),
        Item::Fn(f) => format!("fn {}", f.sig.ident),
        Item::Mod(m) => format!("mod {}", m.ident),
        Item::Trait(t) => format!("trait {}", t.ident),
        Item::Union(u) => format!("union {}", u.ident),
        Item::Macro(m) => format!(
            "macro {}",
            m.ident
                .as_ref()
                .map_or_else(|| tokens(&m.mac.path), ToString::to_string)
        ),
        Item::Impl(i) => format!(
            "impl {} {} for {}",
            tokens(&i.generics),
            i.trait_
                .as_ref()
                .map(|(bang, path, _)| format!("{} {}", bang.is_some(), tokens(path)))
                .unwrap_or_default(),
            tokens(&i.self_ty)
        ),
        other => tokens(other),
    }
}

fn impl_item_key(item: &ImplItem) -> String {
    match item {
        ImplItem::Fn(f) => format!("fn {}", f.sig.ident),
        ImplItem::Const(c) => format!("const {}", c.ident),
        ImplItem::Type(t) => format!("type {}", t.ident),
        other => tokens(other),
    }
}

/// Keys made unique: the second item with a key gets `#1`, and so on.
fn keyed<T>(list: &[T], key: impl Fn(&T) -> String) -> Vec<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    list.iter()
        .map(|item| {
            let k = key(item);
            let n = seen.entry(k.clone()).or_default();
            let unique = if *n == 0 { k } else { format!("{k}#{n}") };
            *n += 1;
            unique
        })
        .collect()
}

/// One merged position: the stable member, the unstable one, or both.
enum Slot<'a, T> {
    Stable(&'a T),
    Unstable(&'a T),
    Both(&'a T, &'a T),
}

/// The members of two lists paired by key, in the unstable list's order; a member only the
/// stable list has comes before the paired member that followed it there.
fn pair<'a, T>(stable: &'a [T], unstable: &'a [T], key: impl Fn(&T) -> String) -> Vec<Slot<'a, T>> {
    let stable_keys = keyed(stable, &key);
    let unstable_keys = keyed(unstable, &key);
    let in_unstable: std::collections::HashSet<&String> = unstable_keys.iter().collect();
    let stable_at: std::collections::HashMap<&String, usize> = stable_keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();
    let mut out = Vec::new();
    let mut next_stable = 0;
    for (u, k) in unstable.iter().zip(&unstable_keys) {
        match stable_at.get(k) {
            Some(&at) => {
                while next_stable < at {
                    if !in_unstable.contains(&stable_keys[next_stable]) {
                        out.push(Slot::Stable(&stable[next_stable]));
                    }
                    next_stable += 1;
                }
                next_stable = next_stable.max(at + 1);
                out.push(Slot::Both(&stable[at], u));
            }
            None => out.push(Slot::Unstable(u)),
        }
    }
    for (s, k) in stable.iter().zip(&stable_keys).skip(next_stable) {
        if !in_unstable.contains(k) {
            out.push(Slot::Stable(s));
        }
    }
    out
}

/// Whether the members both lists have come in the same order in each.
fn same_order<T>(stable: &[T], unstable: &[T], key: impl Fn(&T) -> String) -> bool {
    let stable_keys = keyed(stable, &key);
    let unstable_keys = keyed(unstable, &key);
    let shared: std::collections::HashSet<&String> = stable_keys
        .iter()
        .filter(|k| unstable_keys.contains(k))
        .collect();
    stable_keys
        .iter()
        .filter(|k| shared.contains(k))
        .eq(unstable_keys.iter().filter(|k| shared.contains(k)))
}

/// Attributes of an item (or field, variant) reduced to everything but its docs.
fn non_doc(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| !a.path().is_ident("doc"))
        .map(tokens)
        .collect()
}

/// The attributes of two twins whose non-doc attributes agree: the same, or each build's
/// docs (joined in one attribute) limited to it.
fn merge_attrs(stable: &[Attribute], unstable: &[Attribute]) -> Vec<Attribute> {
    if tokens_of(stable) == tokens_of(unstable) {
        return unstable.to_vec();
    }
    let mut out = Vec::new();
    for (attrs, build) in [(stable, Build::Stable), (unstable, Build::Unstable)] {
        if let Some(doc) = joined_docs(attrs) {
            let cfg = build.cfg();
            out.push(syn::parse_quote!(#[cfg_attr(#cfg, doc = #doc)]));
        }
    }
    out.extend(
        unstable
            .iter()
            .filter(|a| !a.path().is_ident("doc"))
            .cloned(),
    );
    out
}

/// The docs of an attribute list as one string, a line a doc attribute (as rustdoc joins
/// them).
fn joined_docs(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => Some(text.value()),
            _ => None,
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// An attribute list with its docs joined in one attribute, where the first was, and its
/// other attributes in their order: what [`merge_attrs`] keeps of it.
fn docs_joined(attrs: &mut Vec<Attribute>) {
    let Some(doc) = joined_docs(attrs) else {
        return;
    };
    let at = attrs
        .iter()
        .position(|a| a.path().is_ident("doc"))
        .unwrap_or(0);
    attrs.retain(|a| !a.path().is_ident("doc"));
    attrs.insert(at.min(attrs.len()), syn::parse_quote!(#[doc = #doc]));
}

/// Joins the docs of every item, member, field and variant in a file ([`docs_joined`]).
struct JoinDocs;

impl syn::visit_mut::VisitMut for JoinDocs {
    fn visit_item_mut(&mut self, item: &mut Item) {
        if let Some(attrs) = item.attrs_mut() {
            docs_joined(attrs);
        }
        syn::visit_mut::visit_item_mut(self, item);
    }

    fn visit_impl_item_mut(&mut self, item: &mut ImplItem) {
        if let Some(attrs) = item.attrs_mut() {
            docs_joined(attrs);
        }
        syn::visit_mut::visit_impl_item_mut(self, item);
    }

    fn visit_field_mut(&mut self, field: &mut syn::Field) {
        docs_joined(&mut field.attrs);
        syn::visit_mut::visit_field_mut(self, field);
    }

    fn visit_variant_mut(&mut self, variant: &mut syn::Variant) {
        docs_joined(&mut variant.attrs);
        syn::visit_mut::visit_variant_mut(self, variant);
    }
}

fn tokens_of(attrs: &[Attribute]) -> Vec<String> {
    attrs.iter().map(tokens).collect()
}

fn with_cfg<T: Attrs>(mut member: T, build: Build) -> T {
    if let Some(attrs) = member.attrs_mut() {
        attrs.insert(0, build.attr());
    }
    member
}

fn merge_items(stable: &[Item], unstable: &[Item], stats: &mut Stats) -> Vec<Item> {
    let mut out = Vec::new();
    for slot in pair(stable, unstable, item_key) {
        match slot {
            Slot::Unstable(u) => {
                stats.added += 1;
                out.push(with_cfg(u.clone(), Build::Unstable));
            }
            Slot::Stable(s) => {
                stats.twice += 1;
                out.push(with_cfg(s.clone(), Build::Stable));
            }
            Slot::Both(s, u) if tokens(s) == tokens(u) => {
                stats.same += 1;
                out.push(u.clone());
            }
            Slot::Both(s, u) => match merge_item(s, u, stats) {
                Some(item) => {
                    stats.merged += 1;
                    out.push(item);
                }
                None => {
                    stats.twice += 1;
                    out.push(with_cfg(s.clone(), Build::Stable));
                    out.push(with_cfg(u.clone(), Build::Unstable));
                }
            },
        }
    }
    out
}

/// Two twins that differ, written once if they can be.
fn merge_item(stable: &Item, unstable: &Item, stats: &mut Stats) -> Option<Item> {
    match (stable, unstable) {
        (Item::Struct(s), Item::Struct(u)) => {
            let mut header = (s.clone(), u.clone());
            header.0.attrs.clear();
            header.1.attrs.clear();
            header.0.fields = Fields::Unit;
            header.1.fields = Fields::Unit;
            if tokens(&header.0) != tokens(&header.1) || non_doc(&s.attrs) != non_doc(&u.attrs) {
                return None;
            }
            let mut merged = u.clone();
            merged.attrs = merge_attrs(&s.attrs, &u.attrs);
            merged.fields = merge_fields(&s.fields, &u.fields)?;
            Some(Item::Struct(merged))
        }
        (Item::Enum(s), Item::Enum(u)) => {
            let mut header = (s.clone(), u.clone());
            header.0.attrs.clear();
            header.1.attrs.clear();
            header.0.variants.clear();
            header.1.variants.clear();
            if tokens(&header.0) != tokens(&header.1) || non_doc(&s.attrs) != non_doc(&u.attrs) {
                return None;
            }
            let key = |v: &syn::Variant| v.ident.to_string();
            let stable_variants: Vec<_> = s.variants.iter().cloned().collect();
            let unstable_variants: Vec<_> = u.variants.iter().cloned().collect();
            if !same_order(&stable_variants, &unstable_variants, key) {
                return None;
            }
            let mut variants = syn::punctuated::Punctuated::new();
            for slot in pair(&stable_variants, &unstable_variants, key) {
                variants.push(match slot {
                    Slot::Unstable(v) => with_cfg(v.clone(), Build::Unstable),
                    Slot::Stable(v) => with_cfg(v.clone(), Build::Stable),
                    Slot::Both(a, b) => merge_variant(a, b)?,
                });
            }
            let mut merged = u.clone();
            merged.attrs = merge_attrs(&s.attrs, &u.attrs);
            merged.variants = variants;
            Some(Item::Enum(merged))
        }
        (Item::Impl(s), Item::Impl(u)) => {
            if tokens_of(&s.attrs) != tokens_of(&u.attrs) {
                return None;
            }
            let mut items = Vec::new();
            for slot in pair(&s.items, &u.items, impl_item_key) {
                match slot {
                    Slot::Unstable(m) => items.push(with_cfg(m.clone(), Build::Unstable)),
                    Slot::Stable(m) => items.push(with_cfg(m.clone(), Build::Stable)),
                    Slot::Both(a, b) if tokens(a) == tokens(b) => items.push(b.clone()),
                    Slot::Both(a, b) => {
                        stats.twice += 1;
                        items.push(with_cfg(a.clone(), Build::Stable));
                        items.push(with_cfg(b.clone(), Build::Unstable));
                    }
                }
            }
            let mut merged = u.clone();
            merged.items = items;
            Some(Item::Impl(merged))
        }
        (Item::Mod(s), Item::Mod(u)) => {
            let (Some((_, stable_items)), Some((_, unstable_items))) = (&s.content, &u.content)
            else {
                return None;
            };
            if tokens_of(&s.attrs) != tokens_of(&u.attrs) || tokens(&s.vis) != tokens(&u.vis) {
                return None;
            }
            let mut merged = u.clone();
            if let Some((_, items)) = &mut merged.content {
                *items = merge_items(stable_items, unstable_items, stats);
            }
            Some(Item::Mod(merged))
        }
        _ => None,
    }
}

fn merge_fields(stable: &Fields, unstable: &Fields) -> Option<Fields> {
    let (Fields::Named(s), Fields::Named(u)) = (stable, unstable) else {
        return (tokens(stable) == tokens(unstable)).then(|| unstable.clone());
    };
    let key = |f: &syn::Field| {
        f.ident
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    let stable_fields: Vec<_> = s.named.iter().cloned().collect();
    let unstable_fields: Vec<_> = u.named.iter().cloned().collect();
    if !same_order(&stable_fields, &unstable_fields, key) {
        return None;
    }
    let mut named = syn::punctuated::Punctuated::new();
    for slot in pair(&stable_fields, &unstable_fields, key) {
        named.push(match slot {
            Slot::Unstable(f) => with_cfg(f.clone(), Build::Unstable),
            Slot::Stable(f) => with_cfg(f.clone(), Build::Stable),
            Slot::Both(a, b) => {
                let (mut bare_a, mut bare_b) = (a.clone(), b.clone());
                bare_a.attrs.clear();
                bare_b.attrs.clear();
                if tokens(&bare_a) != tokens(&bare_b) || non_doc(&a.attrs) != non_doc(&b.attrs) {
                    return None;
                }
                let mut field = b.clone();
                field.attrs = merge_attrs(&a.attrs, &b.attrs);
                field
            }
        });
    }
    let mut merged = u.clone();
    merged.named = named;
    Some(Fields::Named(merged))
}

fn merge_variant(stable: &syn::Variant, unstable: &syn::Variant) -> Option<syn::Variant> {
    if non_doc(&stable.attrs) != non_doc(&unstable.attrs)
        || tokens(&stable.discriminant.as_ref().map(|d| &d.1))
            != tokens(&unstable.discriminant.as_ref().map(|d| &d.1))
    {
        return None;
    }
    let mut merged = unstable.clone();
    merged.attrs = merge_attrs(&stable.attrs, &unstable.attrs);
    merged.fields = merge_fields(&stable.fields, &unstable.fields)?;
    Some(merged)
}

/// What carries attributes (`None`: an item of verbatim tokens, which cannot; the check of
/// both builds in [`merge`] finds one that differs).
trait Attrs {
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>>;
}

impl Attrs for Item {
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
        Some(match self {
            Item::Const(i) => &mut i.attrs,
            Item::Enum(i) => &mut i.attrs,
            Item::ExternCrate(i) => &mut i.attrs,
            Item::Fn(i) => &mut i.attrs,
            Item::ForeignMod(i) => &mut i.attrs,
            Item::Impl(i) => &mut i.attrs,
            Item::Macro(i) => &mut i.attrs,
            Item::Mod(i) => &mut i.attrs,
            Item::Static(i) => &mut i.attrs,
            Item::Struct(i) => &mut i.attrs,
            Item::Trait(i) => &mut i.attrs,
            Item::TraitAlias(i) => &mut i.attrs,
            Item::Type(i) => &mut i.attrs,
            Item::Union(i) => &mut i.attrs,
            Item::Use(i) => &mut i.attrs,
            _ => return None,
        })
    }
}

impl Attrs for ImplItem {
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
        Some(match self {
            ImplItem::Const(i) => &mut i.attrs,
            ImplItem::Fn(i) => &mut i.attrs,
            ImplItem::Type(i) => &mut i.attrs,
            ImplItem::Macro(i) => &mut i.attrs,
            _ => return None,
        })
    }
}

impl Attrs for syn::Field {
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
        Some(&mut self.attrs)
    }
}

impl Attrs for syn::Variant {
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
        Some(&mut self.attrs)
    }
}

/// Whether `member` stays in `build`, its attributes applied for it.
fn keep<T: Attrs>(member: &mut T, build: Build) -> bool {
    let Some(attrs) = member.attrs_mut() else {
        return true;
    };
    match applied(attrs, build) {
        Some(kept) => {
            *attrs = kept;
            true
        }
        None => false,
    }
}

/// `file` as the compiler sees it in `build`: what the other build's `cfg`s keep is gone,
/// the `cfg`s and `cfg_attr`s of the two builds are applied.
fn strip(file: &syn::File, build: Build) -> syn::File {
    let mut file = file.clone();
    strip_items(&mut file.items, build);
    file
}

/// Whether an attribute list keeps its owner in `build`; the list with the builds'
/// attributes applied.
fn applied(attrs: &[Attribute], build: Build) -> Option<Vec<Attribute>> {
    let mut out = Vec::new();
    for attr in attrs {
        let text = tokens(attr);
        let for_build = |b: Build| {
            let cfg = b.cfg().to_string();
            (
                text == tokens(&b.attr()),
                text.starts_with(&format!("# [cfg_attr ({cfg} ,")),
            )
        };
        let (is_cfg, is_cfg_attr) = for_build(build);
        let other = match build {
            Build::Stable => Build::Unstable,
            Build::Unstable => Build::Stable,
        };
        let (is_other_cfg, is_other_cfg_attr) = for_build(other);
        if is_other_cfg {
            return None;
        }
        if is_cfg || is_other_cfg_attr {
            continue;
        }
        if is_cfg_attr {
            let syn::Meta::List(list) = &attr.meta else {
                continue;
            };
            let parsed = list.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            );
            if let Ok(metas) = parsed {
                for meta in metas.iter().skip(1) {
                    out.push(syn::parse_quote!(#[#meta]));
                }
            }
            continue;
        }
        out.push(attr.clone());
    }
    Some(out)
}

fn strip_items(items: &mut Vec<Item>, build: Build) {
    items.retain_mut(|item| {
        if !keep(item, build) {
            return false;
        }
        match item {
            Item::Struct(s) => strip_fields(&mut s.fields, build),
            Item::Enum(e) => {
                let variants = std::mem::take(&mut e.variants);
                for mut v in variants {
                    if keep(&mut v, build) {
                        strip_fields(&mut v.fields, build);
                        e.variants.push(v);
                    }
                }
            }
            Item::Impl(i) => i.items.retain_mut(|m| keep(m, build)),
            Item::Mod(m) => {
                if let Some((_, items)) = &mut m.content {
                    strip_items(items, build);
                }
            }
            _ => {}
        }
        true
    });
}

fn strip_fields(fields: &mut Fields, build: Build) {
    if let Fields::Named(named) = fields {
        let all = std::mem::take(&mut named.named);
        for mut f in all {
            if keep(&mut f, build) {
                named.named.push(f);
            }
        }
    }
}

/// The first item (by its key) where `got` and `want` differ, if any. Items are compared as
/// sets: the merged file keeps the unstable output's order, which may differ from the stable
/// one's.
fn first_difference(got: &syn::File, want: &syn::File) -> Option<String> {
    // Printed, so that a trailing comma the merge did not keep is no difference, with each
    // thing's docs in one attribute, as the merge writes docs that differ.
    let printed = |item: &Item| {
        let mut file = syn::File {
            shebang: None,
            attrs: Vec::new(),
            items: vec![item.clone()],
        };
        syn::visit_mut::VisitMut::visit_file_mut(&mut JoinDocs, &mut file);
        prettyplease::unparse(&file)
    };
    let index = |file: &syn::File| -> std::collections::BTreeMap<String, String> {
        keyed(&file.items, item_key)
            .into_iter()
            .zip(file.items.iter().map(printed))
            .collect()
    };
    let (got, want) = (index(got), index(want));
    for (key, text) in &want {
        match got.get(key) {
            None => return Some(format!("{key} is missing")),
            Some(other) if other != text => {
                let at = other
                    .bytes()
                    .zip(text.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                let around = |t: &str| {
                    t.get(at.saturating_sub(80)..(at + 80).min(t.len()))
                        .unwrap_or("")
                        .to_owned()
                };
                return Some(format!(
                    "{key} differs: `…{}…` where `…{}…` was meant",
                    around(other),
                    around(text)
                ));
            }
            Some(_) => {}
        }
    }
    got.keys()
        .find(|k| !want.contains_key(*k))
        .map(|k| format!("{k} is extra"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> syn::File {
        syn::parse_str(text).unwrap()
    }

    fn printed(file: &syn::File) -> String {
        prettyplease::unparse(file)
    }

    const STABLE: &str = r#"
        /// A.
        #[derive(Debug)]
        pub struct A { #[serde(rename = "x")] pub x: u8, pub z: u8 }
        pub enum E { One, Two(u8) }
        impl A { pub fn new(x: u8) -> Self { A { x, z: 0 } } pub fn x(self) -> u8 { self.x } }
        pub const LIST: &[&str] = &["a"];
        /// Same in both.
        pub struct Same;
    "#;

    const UNSTABLE: &str = r#"
        /// A, with more to say.
        #[derive(Debug)]
        pub struct A { #[serde(rename = "x")] pub x: u8, pub y: Option<u8>, pub z: u8 }
        pub enum E { One, Three, Two(u8) }
        impl A {
            pub fn new(x: u8) -> Self { A { x, y: None, z: 0 } }
            pub fn x(self) -> u8 { self.x }
            pub fn y(self) -> Option<u8> { self.y }
        }
        pub const LIST: &[&str] = &["a", "b"];
        /// Same in both.
        pub struct Same;
        pub struct New;
    "#;

    #[test]
    fn what_both_have_is_written_once_and_each_build_gets_its_own() {
        let (merged, stats) = merge(&file(STABLE), &file(UNSTABLE)).unwrap();
        let text = printed(&merged);
        assert_eq!(text.matches("pub struct Same").count(), 1, "{text}");
        assert_eq!(text.matches("pub struct A").count(), 1, "{text}");
        assert_eq!(text.matches("pub enum E").count(), 1, "{text}");
        assert_eq!(text.matches("pub fn x(").count(), 1, "{text}");
        assert_eq!(text.matches("pub fn new(").count(), 2, "{text}");
        assert_eq!(text.matches("pub const LIST").count(), 2, "{text}");
        assert!(
            text.contains("#[cfg(feature = \"unstable\")]\n    pub y: Option<u8>"),
            "{text}"
        );
        assert!(
            text.contains("#[cfg(feature = \"unstable\")]\n    Three"),
            "{text}"
        );
        assert!(
            text.contains("#[cfg(feature = \"unstable\")]\npub struct New;"),
            "{text}"
        );
        assert!(
            text.contains("cfg_attr(not(feature = \"unstable\"), doc = \" A.\")"),
            "{text}"
        );
        assert_eq!(
            (stats.same, stats.merged, stats.added),
            (1, 3, 1),
            "{stats:?}"
        );
        for (build, want) in [(Build::Stable, STABLE), (Build::Unstable, UNSTABLE)] {
            assert_eq!(
                first_difference(&strip(&merged, build), &file(want)),
                None,
                "{build:?}"
            );
        }
    }

    #[test]
    fn a_reordered_member_is_written_once_per_build_not_reordered() {
        let stable = file("pub enum E { One, Two }");
        let unstable = file("pub enum E { Two, One }");
        let (merged, _) = merge(&stable, &unstable).unwrap();
        let text = printed(&merged);
        assert_eq!(text.matches("pub enum E").count(), 2, "{text}");
    }

    #[test]
    fn the_builds_are_checked_against_their_outputs() {
        let merged = file("#[cfg(feature = \"unstable\")] pub struct B; pub struct A;");
        assert_eq!(
            first_difference(&strip(&merged, Build::Stable), &file("pub struct A;")),
            None
        );
        assert_eq!(
            first_difference(&strip(&merged, Build::Unstable), &file("pub struct A;")),
            Some("struct B is extra".to_owned())
        );
        assert!(
            first_difference(&strip(&merged, Build::Stable), &file("pub struct A(u8);"))
                .is_some_and(|d| d.starts_with("struct A differs"))
        );
    }
}

//! Our own emitter for the union shapes typify cannot model, handed to typify as replacements.
//!
//! - Internally tagged unions (`{"sessionUpdate": "agent_message_chunk", ...}`) become
//!   `#[serde(tag = "...")]` enums with newtype or unit variants, untagged variants for members
//!   without a tag, and always a final `#[serde(untagged)] Other(Map)` so unknown future
//!   variants round-trip unchanged.
//! - A definition with common properties *and* a tagged union becomes
//!   `struct X { #[serde(flatten)] common: XCommon, #[serde(flatten)] kind: XKind }`, where
//!   typify generates `XCommon` and this emitter writes `XKind`.
//! - Open string enums (`anyOf: [{const}.., {type: string}]`) become a closed enum plus
//!   `Unknown(String)`, with `as_str`, `Display` and `FromStr`.
//!
//! Inline variant payloads are hoisted into definitions of their own (`{Union}{Variant}`) so
//! typify generates them as ordinary structs.

use heck::ToUpperCamelCase;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::{Map, Value, json};

use crate::passes::{Defs, const_str, is_not_catch_all, is_open_string_enum, ref_name, tag_of};

/// What the emitter wrote.
#[derive(Debug, Default)]
pub(crate) struct Emitted {
    pub(crate) items: TokenStream,
    /// Definitions typify must reference by name instead of generating, with what they implement.
    pub(crate) replaced: Vec<(String, Vec<typify::TypeSpaceImpl>)>,
    pub(crate) log: Vec<String>,
}

pub(crate) fn take_unions(defs: &mut Defs) -> Emitted {
    let mut out = Emitted::default();
    let mut hoisted = Defs::new();
    let names: Vec<String> = defs.keys().cloned().collect();
    for name in names {
        let def = defs[&name].clone();
        let Some((key, members)) = union_members(&def) else {
            continue;
        };
        let placeholder =
            json!({ "description": def.get("description").cloned().unwrap_or(json!("")) });
        if def.get("properties").is_none() && is_open_string_enum(members) {
            out.items.extend(open_string_enum(&name, &def, members));
            out.replaced.push((
                name.clone(),
                vec![
                    typify::TypeSpaceImpl::Display,
                    typify::TypeSpaceImpl::FromStr,
                ],
            ));
            out.log.push(format!("open string enum {name}"));
            defs.insert(name, placeholder);
        } else if def.get("properties").is_some() {
            let kind_name = format!("{name}Kind");
            let Some(kind) = tagged_union(&name, &kind_name, None, members, defs, &mut hoisted)
            else {
                continue;
            };
            let common_name = format!("{name}Common");
            let mut common: Map<String, Value> = def.as_object().cloned().unwrap_or_default();
            for k in [key, "discriminator", "x-side", "x-method", "description"] {
                common.remove(k);
            }
            // The tag belongs to the kind, not to the common fields.
            if let Some(tag) = union_tag(members) {
                if let Some(Value::Object(props)) = common.get_mut("properties") {
                    props.remove(tag);
                }
                if let Some(Value::Array(required)) = common.get_mut("required") {
                    required.retain(|r| r.as_str() != Some(tag));
                }
            }
            common.insert("type".into(), json!("object"));
            common.insert(
                "description".into(),
                json!(format!("The fields every kind of `{name}` has.")),
            );
            let (ident, common_ident, kind_ident) =
                (ident(&name), ident(&common_name), ident(&kind_name));
            let docs = doc_attrs(def.get("description"));
            out.items.extend(quote! {
                #docs
                #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, PartialEq)]
                pub struct #ident {
                    /// The fields every kind has.
                    #[serde(flatten)]
                    pub common: #common_ident,
                    /// The fields of this kind, with its tag.
                    #[serde(flatten)]
                    pub kind: #kind_ident,
                }
                #kind
            });
            hoisted.insert(common_name.clone(), Value::Object(common));
            out.replaced.push((name.clone(), vec![]));
            out.log.push(format!(
                "common fields + tagged union {name} ({common_name} + {kind_name})"
            ));
            defs.insert(name, placeholder);
        } else if union_tag(members).is_some()
            && let Some(items) = tagged_union(
                &name,
                &name,
                def.get("description"),
                members,
                defs,
                &mut hoisted,
            )
        {
            out.items.extend(items);
            out.replaced.push((name.clone(), vec![]));
            out.log.push(format!("tagged union {name}"));
            defs.insert(name, placeholder);
        }
    }
    for (name, def) in hoisted {
        out.log.push(format!("  hoisted {name}"));
        defs.insert(name, def);
    }
    out
}

fn union_members(def: &Value) -> Option<(&'static str, &[Value])> {
    ["oneOf", "anyOf"]
        .into_iter()
        .find_map(|k| Some((k, def.get(k)?.as_array()?.as_slice())))
}

/// A Rust identifier for a type or variant name from the schema.
pub(crate) fn ident(name: &str) -> Ident {
    let mut s = name.to_upper_camel_case();
    if s.is_empty() {
        s = "Empty".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'V');
    }
    Ident::new(&s, Span::call_site())
}

/// `#[doc]` attributes, one per line, from a schema description.
pub(crate) fn doc_attrs(description: Option<&Value>) -> TokenStream {
    let Some(text) = description.and_then(Value::as_str) else {
        return TokenStream::new();
    };
    let lines = text.lines().map(|l| {
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    });
    quote! { #(#[doc = #lines])* }
}

/// The name a member refers to when it is only a reference: `{$ref}` or `{allOf: [{$ref}]}`.
fn only_ref(member: &Value) -> Option<&str> {
    let m = member.as_object()?;
    let meta = |k: &String| matches!(k.as_str(), "description" | "title");
    if let Some(r) = m.get("$ref").and_then(Value::as_str)
        && m.keys().filter(|k| !meta(k)).count() == 1
    {
        return Some(ref_name(r));
    }
    match m.get("allOf")?.as_array()?.as_slice() {
        [one] if m.keys().filter(|k| !meta(k)).count() == 1 => {
            one.get("$ref")?.as_str().map(ref_name)
        }
        _ => None,
    }
}

fn tagged_union(
    union_name: &str,
    enum_name: &str,
    description: Option<&Value>,
    members: &[Value],
    defs: &Defs,
    hoisted: &mut Defs,
) -> Option<TokenStream> {
    let tags: Vec<&str> = members.iter().filter_map(tag_of).map(|(p, _)| p).collect();
    let tag = tags.first().copied();
    if tags.iter().any(|t| Some(*t) != tag) {
        return None;
    }
    if tag.is_none()
        && !members
            .iter()
            .all(|m| only_ref(m).is_some() || is_inline_object(m))
    {
        return None;
    }
    let mut variants = Vec::new();
    let mut untagged = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    for member in members {
        let docs = doc_attrs(member.get("description"));
        if let Some((_, value)) = tag_of(member) {
            used.insert(ident(value).to_string());
            variants.push(tagged_variant(
                union_name, member, tag, value, &docs, defs, hoisted,
            ));
        } else if is_not_catch_all(member) {
            // Re-added below for every union.
        } else {
            // A member shape we do not model: leave the whole union to typify.
            let (variant, tokens) =
                untagged_variant(union_name, member, untagged.len(), &docs, defs, hoisted)?;
            used.insert(variant);
            untagged.push(tokens);
        }
    }
    let name = ident(enum_name);
    let docs = doc_attrs(description);
    let Some(tag) = tag else {
        // No tag at all: the members are told apart by their fields.
        return Some(quote! {
            #docs
            #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, PartialEq)]
            #[serde(untagged)]
            pub enum #name {
                #(#untagged)*
            }
        });
    };
    let other = ident(if used.contains("Other") {
        "Unknown"
    } else {
        "Other"
    });
    Some(quote! {
        #docs
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, PartialEq)]
        #[serde(tag = #tag)]
        pub enum #name {
            #(#variants)*
            #(#untagged)*
            /// A kind this version of the schema does not know, kept as it was received.
            #[serde(untagged)]
            #other(::serde_json::Map<::std::string::String, ::serde_json::Value>),
        }
    })
}

/// The variant of a member tagged `value`: a unit variant, one holding the member's `$ref`,
/// or one holding the member's other properties, hoisted into a definition of their own.
fn tagged_variant(
    union_name: &str,
    member: &Value,
    tag: Option<&str>,
    value: &str,
    docs: &TokenStream,
    defs: &Defs,
    hoisted: &mut Defs,
) -> TokenStream {
    let variant = ident(value);
    let extra: Map<String, Value> = member
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(k, _)| Some(k.as_str()) != tag)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let all_of = member
        .get("allOf")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let payload = match (extra.is_empty(), all_of.as_slice()) {
        (true, []) => None,
        (true, [one]) if one.get("$ref").is_some() => {
            one["$ref"].as_str().map(|r| ref_name(r).to_owned())
        }
        _ => {
            let mut body: Map<String, Value> = member.as_object().cloned().unwrap_or_default();
            body.insert("properties".into(), Value::Object(extra));
            let required: Vec<Value> = member
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter(|x| x.as_str() != tag).cloned().collect())
                .unwrap_or_default();
            body.insert("required".into(), Value::Array(required));
            Some(hoist(
                &format!("{union_name}{variant}"),
                body,
                defs,
                hoisted,
            ))
        }
    };
    match payload {
        None => quote! { #docs #[serde(rename = #value)] #variant, },
        Some(p) => {
            let p = ident(&p);
            quote! { #docs #[serde(rename = #value)] #variant(#p), }
        }
    }
}

/// The variant of an untagged member (the `index`th), told apart by its fields: one holding
/// its `$ref`, or its inline object hoisted under its title; `None` for a shape not modelled.
/// The variant's name and tokens.
fn untagged_variant(
    union_name: &str,
    member: &Value,
    index: usize,
    docs: &TokenStream,
    defs: &Defs,
    hoisted: &mut Defs,
) -> Option<(String, TokenStream)> {
    if let Some(target) = only_ref(member) {
        let variant = ident(
            member
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or(target),
        );
        let target = ident(target);
        return Some((
            variant.to_string(),
            quote! { #docs #[serde(untagged)] #variant(#target), },
        ));
    }
    if !is_inline_object(member) {
        return None;
    }
    let title = member
        .get("title")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let variant = ident(&title.unwrap_or_else(|| format!("Variant{index}")));
    let body = member.as_object().cloned().unwrap_or_default();
    let name = hoist(&format!("{union_name}{variant}"), body, defs, hoisted);
    let target = ident(&name);
    Some((
        variant.to_string(),
        quote! { #docs #[serde(untagged)] #variant(#target), },
    ))
}

/// Makes an inline variant payload a definition of its own, under the first free name of
/// `wanted`, `wantedPayload`, …; returns that name.
fn hoist(wanted: &str, mut body: Map<String, Value>, defs: &Defs, hoisted: &mut Defs) -> String {
    let mut name = wanted.to_owned();
    while defs.contains_key(&name) || hoisted.contains_key(&name) {
        name.push_str("Payload");
    }
    body.remove("title");
    body.insert("type".into(), json!("object"));
    hoisted.insert(name.clone(), Value::Object(body));
    name
}

/// An inline object schema (not a reference) that a variant can be made of.
fn is_inline_object(member: &Value) -> bool {
    member.get("properties").is_some()
        && member.get("$ref").is_none()
        && member.get("not").is_none()
}

/// The tag property of a union's members, if they share one.
fn union_tag(members: &[Value]) -> Option<&str> {
    members.iter().find_map(tag_of).map(|(p, _)| p)
}

fn open_string_enum(name: &str, def: &Value, members: &[Value]) -> TokenStream {
    let consts: Vec<&Value> = members.iter().filter(|m| const_str(m).is_some()).collect();
    let values: Vec<&str> = consts.iter().filter_map(|m| const_str(m)).collect();
    let variants: Vec<Ident> = values.iter().map(|v| ident(v)).collect();
    let unknown = ident(if variants.iter().any(|v| v == "Unknown") {
        "Custom"
    } else {
        "Unknown"
    });
    let docs: Vec<TokenStream> = consts
        .iter()
        .map(|m| doc_attrs(m.get("description")))
        .collect();
    let ty = ident(name);
    let type_docs = doc_attrs(def.get("description"));
    quote! {
        #type_docs
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum #ty {
            #(#docs #[serde(rename = #values)] #variants,)*
            /// A value this version of the schema does not know, kept as it was received.
            #[serde(untagged)]
            #unknown(::std::string::String),
        }

        impl #ty {
            /// The value as it appears on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    #(Self::#variants => #values,)*
                    Self::#unknown(s) => s.as_str(),
                }
            }
        }

        impl ::std::fmt::Display for #ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for #ty {
            type Err = ::std::convert::Infallible;
            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                Ok(match s {
                    #(#values => Self::#variants,)*
                    other => Self::#unknown(other.to_owned()),
                })
            }
        }

        impl ::std::convert::From<&str> for #ty {
            fn from(s: &str) -> Self {
                match s.parse() {
                    Ok(v) => v,
                    Err(never) => match never {},
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(v: Value) -> Defs {
        v.as_object().unwrap().clone()
    }

    fn text(ts: &TokenStream) -> String {
        prettyplease::unparse(&syn::parse2(ts.clone()).unwrap())
    }

    #[test]
    fn tagged_union_with_refs_units_inline_payloads_and_catch_all() {
        let mut d = defs(json!({
            "Chunk": {"type": "object", "properties": {"text": {"type": "string"}}},
            "Update": {"description": "An update.", "anyOf": [
                {"properties": {"kind": {"const": "chunk"}}, "required": ["kind"], "allOf": [{"$ref": "#/$defs/Chunk"}]},
                {"properties": {"kind": {"const": "done"}}, "required": ["kind"]},
                {"properties": {"kind": {"const": "usage"}, "used": {"type": "integer"}}, "required": ["kind", "used"]},
                {"title": "other", "not": {"anyOf": []}}]}}));
        let out = take_unions(&mut d);
        let code = text(&out.items);
        assert!(code.contains(r#"#[serde(tag = "kind")]"#), "{code}");
        assert!(code.contains("Chunk(Chunk)"), "{code}");
        assert!(code.contains("Done,"), "{code}");
        assert!(code.contains("Usage(UpdateUsage)"), "{code}");
        assert!(code.contains("Other(::serde_json::Map"), "{code}");
        assert_eq!(d["UpdateUsage"]["required"], json!(["used"]));
        assert_eq!(d["Update"], json!({"description": "An update."}));
        assert_eq!(out.replaced.len(), 1);
    }

    #[test]
    fn untagged_members_keep_their_title() {
        let mut d = defs(json!({"Server": {"anyOf": [
            {"properties": {"type": {"const": "http"}}, "required": ["type"], "allOf": [{"$ref": "#/$defs/Http"}]},
            {"title": "stdio", "allOf": [{"$ref": "#/$defs/Stdio"}]}]}}));
        let code = text(&take_unions(&mut d).items);
        assert!(
            code.contains("#[serde(untagged)]\n    Stdio(Stdio)"),
            "{code}"
        );
    }

    #[test]
    fn common_fields_and_a_tagged_union() {
        let mut d = defs(
            json!({"Opt": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id", "type"],
            "oneOf": [{"properties": {"type": {"const": "select"}}, "required": ["type"]}]}}),
        );
        let out = take_unions(&mut d);
        let code = text(&out.items);
        assert!(code.contains("pub common: OptCommon"), "{code}");
        assert!(code.contains("pub enum OptKind"), "{code}");
        assert_eq!(
            d["OptCommon"]["properties"],
            json!({"id": {"type": "string"}})
        );
    }

    #[test]
    fn open_string_enum_keeps_unknown_values() {
        let mut d = defs(
            json!({"Kind": {"anyOf": [{"const": "read"}, {"const": "other"}, {"type": "string"}]}}),
        );
        let out = take_unions(&mut d);
        let code = text(&out.items);
        assert!(code.contains("Unknown(::std::string::String)"), "{code}");
        assert!(code.contains(r#"Self::Read => "read""#), "{code}");
    }

    #[test]
    fn unknown_member_shapes_are_left_to_typify() {
        let mut d = defs(json!({"U": {"oneOf": [
            {"properties": {"k": {"const": "a"}}, "required": ["k"]},
            {"type": "array"}]}}));
        assert!(take_unions(&mut d).replaced.is_empty());
    }

    #[test]
    fn untagged_inline_members_are_hoisted_under_their_title() {
        let mut d = defs(
            json!({"Set": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "anyOf": [
            {"properties": {"type": {"const": "boolean"}, "value": {"type": "boolean"}}, "required": ["type", "value"]},
            {"title": "value_id", "properties": {"value": {"type": "string"}}, "required": ["value"]}]}}),
        );
        let code = text(&take_unions(&mut d).items);
        assert!(code.contains("Boolean(SetBoolean)"), "{code}");
        assert!(
            code.contains("#[serde(untagged)]\n    ValueId(SetValueId)"),
            "{code}"
        );
        assert_eq!(d["SetValueId"]["required"], json!(["value"]));
    }

    #[test]
    fn a_union_without_tags_is_untagged_and_the_tag_leaves_the_common_part() {
        let mut d = defs(json!({
            "Mode": {"type": "object", "properties": {"schema": {}}, "anyOf": [
                {"title": "Session", "allOf": [{"$ref": "#/$defs/SessionScope"}]},
                {"title": "Request", "allOf": [{"$ref": "#/$defs/RequestScope"}]}]},
            "Idle": {"type": "object", "properties": {"stopReason": {"type": ["string", "null"]}, "bg": {}}, "anyOf": [
                {"properties": {"stopReason": {"const": "end_turn"}}, "required": ["stopReason"]}]}}));
        let code = text(&take_unions(&mut d).items);
        assert!(
            code.contains("#[serde(untagged)]\npub enum ModeKind"),
            "{code}"
        );
        assert!(code.contains("Session(SessionScope)"), "{code}");
        assert_eq!(d["IdleCommon"]["properties"], json!({"bg": {}}));
    }
}

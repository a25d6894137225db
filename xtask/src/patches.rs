//! Pass: fields with patch semantics get three states.
//!
//! ACP v2's updates say of some fields that omitting them leaves the receiver's value as it
//! is while `null` clears it (`ToolCallUpdate`, whose description gives every field "patch
//! semantics"; `SessionInfoUpdate.title`, "Set to null to clear"; `UsageUpdate.cost`; the
//! `_meta` of updates). typify renders them as `Option<T>`, which reads `null` as absent and
//! cannot write it. Such a field becomes `crate::Patch<T>` (absent, `null`, a value), skipped
//! only when absent. Arrays stay `Option<Vec<T>>`: for them `null` and `[]` both clear.
//!
//! The schema has no annotation for this: the descriptions are what says it, so the pass reads
//! them (a struct's "patch semantics", a field's "`null` clears/unsets/resets", "set to null
//! to clear"), and its tests pin the fields it finds.

use std::collections::BTreeSet;

use serde_json::Value;
use syn::punctuated::Punctuated;
use syn::{Fields, Item, Meta, Token, Type, parse_quote};

use crate::emit_unions::ident;
use crate::passes::Defs;

/// Whether a description says that `null` clears (or resets) the field.
fn null_clears(description: &str) -> bool {
    let text = description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    [
        "`null` clears",
        "`null` unsets",
        "`null` resets",
        "set to null to clear",
    ]
    .iter()
    .any(|phrase| text.contains(phrase))
}

/// The `(struct, JSON property)` pairs with patch semantics.
fn patch_properties(defs: &Defs) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for (def_name, def) in defs {
        let Some(props) = def.get("properties").and_then(Value::as_object) else {
            continue;
        };
        let description = |v: &Value| {
            v.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let whole = description(def).to_lowercase().contains("patch semantics");
        let required: BTreeSet<&str> = def
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (prop, schema) in props {
            if required.contains(prop.as_str()) {
                continue;
            }
            if whole || null_clears(&description(schema)) {
                found.insert((ident(def_name).to_string(), prop.clone()));
            }
        }
    }
    found
}

/// `T` of `Option<T>`, unless `T` is a `Vec`.
fn optional_scalar(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    let inner = a.args.iter().find_map(|g| match g {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })?;
    let is_vec =
        matches!(&inner, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec"));
    (!is_vec).then_some(inner)
}

/// Turns the patch fields' `Option<T>` into `crate::Patch<T>`; returns how many.
pub(crate) fn patch_fields(file: &mut syn::File, defs: &Defs) -> usize {
    let wanted = patch_properties(defs);
    let mut n = 0;
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        let name = s.ident.to_string();
        let Fields::Named(fields) = &mut s.fields else {
            continue;
        };
        for f in fields.named.iter_mut() {
            let mut metas: Vec<Meta> = Vec::new();
            f.attrs.retain(|a| {
                if !a.path().is_ident("serde") {
                    return true;
                }
                if let Ok(list) = a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                {
                    metas.extend(list);
                }
                false
            });
            let json_name = metas
                .iter()
                .find_map(|m| match m {
                    Meta::NameValue(nv) if nv.path.is_ident("rename") => match &nv.value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => Some(s.value()),
                        _ => None,
                    },
                    _ => None,
                })
                .unwrap_or_else(|| {
                    f.ident
                        .as_ref()
                        .map(|i| i.to_string().trim_start_matches("r#").to_owned())
                        .unwrap_or_default()
                });
            if wanted.contains(&(name.clone(), json_name))
                && let Some(inner) = optional_scalar(&f.ty)
            {
                f.ty = parse_quote!(crate::Patch<#inner>);
                for m in &mut metas {
                    if m.path().is_ident("skip_serializing_if") {
                        *m = parse_quote!(skip_serializing_if = "crate::Patch::is_absent");
                    }
                }
                n += 1;
            }
            if !metas.is_empty() {
                f.attrs.push(parse_quote!(#[serde(#(#metas),*)]));
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_that_say_null_clears_are_found() {
        assert!(null_clears(
            "Omission leaves the title unchanged, `null` unsets it."
        ));
        assert!(null_clears(
            "Omitted leaves the stored metadata unchanged. `null`\nclears it."
        ));
        assert!(null_clears(
            "Human-readable title for the session. Set to null to clear."
        ));
        assert!(!null_clears(
            "Omitted and `null` are equivalent and mean no metadata."
        ));
    }
}

//! Schema passes: rewrites of the JSON Schema that make typify 0.8 produce correct types.
//!
//! Each pass is a function over the definitions map, returns how many places it changed, and
//! has a unit test on a tiny fixture. Why each exists (each measured against typify 0.8 on the
//! pinned schemas):
//! - typify panics on a `$ref` with sibling keywords, and on `not`;
//! - it ignores `const`, so discriminators do not discriminate;
//! - a non-nullable `anyOf` becomes a struct of flattened options that drops data;
//! - untagged unions pick the first variant that fits, so order matters;
//! - an optional free-form object becomes a map that loses `{}`;
//! - an object without `additionalProperties` (open, in JSON Schema) becomes a struct that drops
//!   every key it does not name, which matters where the value is itself a JSON Schema.

use heck::ToUpperCamelCase;
use serde_json::{Map, Value, json};

pub(crate) type Defs = Map<String, Value>;

/// Calls `f` on every object in `v`, parents before children.
fn visit_objects(v: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    match v {
        Value::Object(m) => {
            f(m);
            for child in m.values_mut() {
                visit_objects(child, f);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| visit_objects(x, f)),
        _ => {}
    }
}

fn visit_defs(defs: &mut Defs, f: &mut impl FnMut(&mut Map<String, Value>)) {
    for def in defs.values_mut() {
        visit_objects(def, f);
    }
}

/// The string a schema pins a value to: `const: "x"` or a one-value `enum: ["x"]`.
pub(crate) fn const_str(schema: &Value) -> Option<&str> {
    match schema.get("const") {
        Some(Value::String(s)) => Some(s),
        _ => match schema
            .get("enum")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([Value::String(s)]) => Some(s),
            _ => None,
        },
    }
}

/// The `required` property names of an object schema, in the schema's order.
pub(crate) fn required_of(schema: &Map<String, Value>) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The name a `$ref` points at.
pub(crate) fn ref_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

/// `{"$ref": X, <siblings>}` → `{"allOf": [{"$ref": X}], <siblings>}`.
pub(crate) fn ref_siblings_to_all_of(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        if m.len() > 1
            && let Some(reference) = m.remove("$ref")
        {
            let mut all = vec![json!({ "$ref": reference })];
            if let Some(Value::Array(rest)) = m.remove("allOf") {
                all.extend(rest);
            }
            m.insert("allOf".into(), Value::Array(all));
            n += 1;
        }
    });
    n
}

/// String `const: V` → `enum: [V]` (typify honours one-value enums, not `const`).
pub(crate) fn const_to_enum(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        if matches!(m.get("const"), Some(Value::String(_)))
            && let Some(v) = m.remove("const")
        {
            m.insert("enum".into(), json!([v]));
            n += 1;
        }
    });
    n
}

/// Whether a union member is the `{"title": "other", "not": ...}` catch-all of an open union.
pub(crate) fn is_not_catch_all(v: &Value) -> bool {
    v.get("not").is_some()
}

/// Drops `not`-based catch-all members of unions (typify panics on `not`). Returns where it did
/// so; the union emitter re-adds an `Other` variant to the unions it writes itself.
pub(crate) fn drop_not_catch_alls(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = m.get_mut(key) {
                let before = members.len();
                members.retain(|x| !is_not_catch_all(x));
                n += before - members.len();
            }
        }
    });
    n
}

/// Open string enums `anyOf: [{const}.., {type: string}]` nested inside other definitions lose
/// their free-form member (the emitter writes the top-level ones with an `Unknown(String)`).
pub(crate) fn close_open_string_enums(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = m.get_mut(key)
                && is_open_string_enum(members)
            {
                members.retain(|x| const_str(x).is_some());
                n += 1;
            }
        }
    });
    n
}

/// `[{const: "a"}, .., {type: "string"}]`: string constants plus exactly one free string.
pub(crate) fn is_open_string_enum(members: &[Value]) -> bool {
    let consts = members.iter().filter(|x| const_str(x).is_some()).count();
    let free = members.iter().filter(|x| is_free_string(x)).count();
    consts > 0 && free == 1 && consts + free == members.len()
}

fn is_free_string(v: &Value) -> bool {
    v.get("type") == Some(&json!("string"))
        && const_str(v).is_none()
        && ["enum", "pattern", "format"]
            .iter()
            .all(|k| v.get(k).is_none())
}

/// A union of integer constants (ACP `ErrorCode`) → a plain integer, which typify renders as a
/// newtype. The constants' titles are returned as `(definition, title, value)` so they can be
/// offered as associated constants.
pub(crate) fn integer_const_unions(defs: &mut Defs) -> (usize, Vec<(String, String, i64)>) {
    let mut n = 0;
    let mut consts = Vec::new();
    for (name, def) in defs.iter_mut() {
        let Some(m) = def.as_object_mut() else {
            continue;
        };
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(members)) = m.get(key) else {
                continue;
            };
            let all_int = members
                .iter()
                .all(|x| x.get("type") == Some(&json!("integer")));
            if !all_int
                || !members
                    .iter()
                    .any(|x| x.get("const").is_some_and(Value::is_i64))
            {
                continue;
            }
            let format = members
                .iter()
                .find_map(|x| x.get("format").cloned())
                .unwrap_or(json!("int32"));
            for x in members {
                if let (Some(title), Some(v)) = (
                    x.get("title").and_then(Value::as_str),
                    x.get("const").and_then(Value::as_i64),
                ) {
                    consts.push((name.clone(), title.to_owned(), v));
                }
            }
            m.remove(key);
            m.insert("type".into(), json!("integer"));
            m.insert("format".into(), format);
            n += 1;
        }
    }
    (n, consts)
}

/// `format: date-time` is dropped so such strings stay `String`s: typify would map them to
/// `chrono` types, whose re-serialization can change a timestamp's text.
pub(crate) fn plain_date_times(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        if m.get("format") == Some(&json!("date-time")) {
            m.remove("format");
            n += 1;
        }
    });
    n
}

/// `anyOf` that is not the nullable `[X, null]` form → `oneOf`.
pub(crate) fn any_of_to_one_of(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        let Some(Value::Array(members)) = m.get("anyOf") else {
            return;
        };
        let nullable = members.len() == 2
            && members
                .iter()
                .any(|x| x.get("type") == Some(&json!("null")));
        if !nullable
            && !m.contains_key("oneOf")
            && let Some(members) = m.remove("anyOf")
        {
            m.insert("oneOf".into(), members);
            n += 1;
        }
    });
    n
}

/// The `(property, value)` a union member is tagged with: a required property pinned to a string.
pub(crate) fn tag_of(member: &Value) -> Option<(&str, &str)> {
    let required = member.get("required")?.as_array()?;
    member
        .get("properties")?
        .as_object()?
        .iter()
        .find_map(|(p, s)| {
            let value = const_str(s)?;
            required
                .iter()
                .any(|r| r == p)
                .then_some((p.as_str(), value))
        })
}

/// Gives tagged union members a `title` from their tag value, so typify names the variant
/// `UserMessageChunk` rather than `Variant0`; a title that would collide with a definition
/// name is prefixed with the union's name.
pub(crate) fn titles_from_tags(defs: &mut Defs) -> usize {
    let names: Vec<String> = defs.keys().cloned().collect();
    let mut n = 0;
    for (def_name, def) in defs.iter_mut() {
        visit_objects(def, &mut |m| {
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(members)) = m.get_mut(key) else {
                    continue;
                };
                for member in members.iter_mut() {
                    if member.get("title").is_some() {
                        continue;
                    }
                    let Some((_, value)) = tag_of(member) else {
                        continue;
                    };
                    let mut title = value.to_upper_camel_case();
                    if names.contains(&title) {
                        title = format!("{def_name}{title}");
                    }
                    member["title"] = json!(title);
                    n += 1;
                }
            }
        });
    }
    n
}

/// Untagged unions of object definitions: members with more required properties first, so
/// that a member with only optional fields cannot swallow the others' messages.
pub(crate) fn order_untagged_by_required(defs: &mut Defs) -> usize {
    let required_of: std::collections::HashMap<String, usize> = defs
        .iter()
        .filter(|(_, d)| d.get("type") == Some(&json!("object")))
        .map(|(k, d)| {
            (
                k.clone(),
                d.get("required")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len),
            )
        })
        .collect();
    let target = |x: &Value| -> Option<usize> {
        let r = x
            .get("$ref")
            .or_else(|| x.get("allOf")?.get(0)?.get("$ref"))?
            .as_str()?;
        required_of.get(ref_name(r)).copied()
    };
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(members)) = m.get_mut(key) else {
                continue;
            };
            if members.len() < 2 || !members.iter().all(|x| target(x).is_some()) {
                continue;
            }
            let before: Vec<usize> = members.iter().filter_map(&target).collect();
            let mut sorted = before.clone();
            sorted.sort_by(|a, b| b.cmp(a));
            if before != sorted {
                // A stable sort keeps the schema's order among equals.
                members.sort_by_key(|x| std::cmp::Reverse(target(x).unwrap_or(0)));
                n += 1;
            }
        }
    });
    n
}

/// Optional free-form object properties (`type: object` without `properties`) become
/// `type: ["object", "null"]`, which typify renders as `Option<Map>`: `{}` stays `{}` and
/// absent stays absent (in MCP, `"logging": {}` *is* the capability).
pub(crate) fn keep_optional_free_form_objects(defs: &mut Defs) -> usize {
    let mut n = 0;
    visit_defs(defs, &mut |m| {
        let required = required_of(m);
        let Some(Value::Object(props)) = m.get_mut("properties") else {
            return;
        };
        for (name, p) in props.iter_mut() {
            if !required.contains(name)
                && p.get("type") == Some(&json!("object"))
                && p.get("properties").is_none()
            {
                p["type"] = json!(["object", "null"]);
                n += 1;
            }
        }
    });
    n
}

/// Properties whose values are JSON Schemas (`(definition, property)`): the schema names a few
/// of their keywords, but a JSON Schema has many more (`$defs`, `additionalProperties`,
/// `description`, …) that must survive a round trip.
pub(crate) const JSON_SCHEMA_VALUES: &[(&str, &str)] =
    &[("Tool", "inputSchema"), ("Tool", "outputSchema")];

/// Marks the properties of [`JSON_SCHEMA_VALUES`] open (`additionalProperties: {}`), which typify
/// renders as a flattened map of the keys the struct does not name.
pub(crate) fn keep_json_schema_keywords(defs: &mut Defs) -> usize {
    let mut n = 0;
    for (def, property) in JSON_SCHEMA_VALUES {
        let Some(Value::Object(schema)) = defs
            .get_mut(*def)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(*property))
        else {
            continue;
        };
        if !schema.contains_key("additionalProperties") {
            schema.insert("additionalProperties".into(), json!({}));
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_schema_values_keep_the_keywords_they_do_not_name() {
        let mut d = defs(json!({"Tool": {"properties": {
            "inputSchema": {"type": "object", "properties": {"type": {"const": "object"}}},
            "outputSchema": {"type": "object", "additionalProperties": false},
            "name": {"type": "string"}
        }}}));
        assert_eq!(keep_json_schema_keywords(&mut d), 1);
        assert_eq!(
            d["Tool"]["properties"]["inputSchema"]["additionalProperties"],
            json!({})
        );
        assert_eq!(
            d["Tool"]["properties"]["outputSchema"]["additionalProperties"],
            json!(false),
            "an explicit choice stays"
        );
    }

    fn defs(v: Value) -> Defs {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn ref_with_siblings_becomes_all_of() {
        let mut d = defs(
            json!({"A": {"properties": {"x": {"$ref": "#/$defs/B", "description": "d"}, "y": {"$ref": "#/$defs/B"}}}}),
        );
        assert_eq!(ref_siblings_to_all_of(&mut d), 1);
        assert_eq!(
            d["A"]["properties"]["x"],
            json!({"allOf": [{"$ref": "#/$defs/B"}], "description": "d"})
        );
        assert_eq!(d["A"]["properties"]["y"], json!({"$ref": "#/$defs/B"}));
    }

    #[test]
    fn string_const_becomes_one_value_enum() {
        let mut d = defs(
            json!({"A": {"properties": {"t": {"type": "string", "const": "x"}, "n": {"const": 3}}}}),
        );
        assert_eq!(const_to_enum(&mut d), 1);
        assert_eq!(
            d["A"]["properties"]["t"],
            json!({"type": "string", "enum": ["x"]})
        );
        assert_eq!(d["A"]["properties"]["n"], json!({"const": 3}));
    }

    #[test]
    fn not_catch_alls_are_dropped() {
        let mut d = defs(
            json!({"U": {"anyOf": [{"$ref": "#/$defs/A"}, {"title": "other", "not": {"anyOf": []}}]}}),
        );
        assert_eq!(drop_not_catch_alls(&mut d), 1);
        assert_eq!(d["U"]["anyOf"], json!([{"$ref": "#/$defs/A"}]));
    }

    #[test]
    fn nested_open_string_enums_are_closed() {
        let mut d = defs(
            json!({"A": {"properties": {"k": {"anyOf": [{"const": "a"}, {"const": "b"}, {"type": "string"}]}}}}),
        );
        assert_eq!(close_open_string_enums(&mut d), 1);
        assert_eq!(
            d["A"]["properties"]["k"]["anyOf"],
            json!([{"const": "a"}, {"const": "b"}])
        );
        assert!(!is_open_string_enum(&[
            json!({"const": "a"}),
            json!({"type": "string", "format": "uri"})
        ]));
    }

    #[test]
    fn integer_const_union_becomes_integer() {
        let mut d = defs(json!({"E": {"anyOf": [
            {"title": "Parse error", "type": "integer", "format": "int32", "const": -32700},
            {"title": "Other", "type": "integer", "format": "int32"}]}}));
        let (n, consts) = integer_const_unions(&mut d);
        assert_eq!(n, 1);
        assert_eq!(d["E"], json!({"type": "integer", "format": "int32"}));
        assert_eq!(
            consts,
            vec![("E".to_owned(), "Parse error".to_owned(), -32700)]
        );
    }

    #[test]
    fn date_times_stay_strings() {
        let mut d = defs(
            json!({"A": {"properties": {"at": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uri"}}}}),
        );
        assert_eq!(plain_date_times(&mut d), 1);
        assert_eq!(d["A"]["properties"]["at"], json!({"type": "string"}));
        assert_eq!(d["A"]["properties"]["u"]["format"], "uri");
    }

    #[test]
    fn any_of_becomes_one_of_unless_nullable() {
        let mut d = defs(json!({
            "A": {"anyOf": [{"$ref": "#/$defs/X"}, {"$ref": "#/$defs/Y"}]},
            "B": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}}));
        assert_eq!(any_of_to_one_of(&mut d), 1);
        assert!(d["A"].get("oneOf").is_some());
        assert!(d["B"].get("anyOf").is_some());
    }

    #[test]
    fn tagged_members_get_titles_without_collisions() {
        let mut d = defs(json!({
            "Plan": {"type": "object"},
            "U": {"oneOf": [
                {"properties": {"k": {"const": "agent_message_chunk"}}, "required": ["k"]},
                {"properties": {"k": {"const": "plan"}}, "required": ["k"]},
                {"properties": {"k": {"const": "x"}}, "required": ["k"], "title": "Kept"},
                {"properties": {"k": {"const": "y"}}}]}}));
        assert_eq!(titles_from_tags(&mut d), 2);
        let titles: Vec<_> = d["U"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.get("title").cloned())
            .collect();
        assert_eq!(
            titles,
            vec![
                Some(json!("AgentMessageChunk")),
                Some(json!("UPlan")),
                Some(json!("Kept")),
                None
            ]
        );
    }

    #[test]
    fn untagged_members_with_more_required_fields_come_first() {
        let mut d = defs(json!({
            "Loose": {"type": "object", "properties": {"a": {}}},
            "Strict": {"type": "object", "properties": {"c": {}}, "required": ["c"]},
            "U": {"oneOf": [{"$ref": "#/$defs/Loose"}, {"$ref": "#/$defs/Strict"}]}}));
        assert_eq!(order_untagged_by_required(&mut d), 1);
        assert_eq!(d["U"]["oneOf"][0], json!({"$ref": "#/$defs/Strict"}));
    }

    #[test]
    fn optional_free_form_objects_stay_distinct_from_absent() {
        let mut d = defs(
            json!({"Caps": {"type": "object", "required": ["must"], "properties": {
            "logging": {"type": "object"},
            "must": {"type": "object"},
            "shaped": {"type": "object", "properties": {"x": {}}}}}}),
        );
        assert_eq!(keep_optional_free_form_objects(&mut d), 1);
        assert_eq!(
            d["Caps"]["properties"]["logging"]["type"],
            json!(["object", "null"])
        );
        assert_eq!(d["Caps"]["properties"]["must"]["type"], json!("object"));
    }
}

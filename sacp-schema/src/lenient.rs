//! Deserialization helpers for the schema's leniency hints, used by the generated code.
//!
//! The ACP schema marks fields whose bad values must not reject a whole message:
//! - `x-deserialize-default-on-error`: a value that does not fit becomes the default;
//! - `x-deserialize-default-on-null`: `null` becomes the default;
//! - `x-deserialize-skip-invalid-items`: array items that do not fit are dropped.
//!
//! The generator attaches these functions with `#[serde(deserialize_with)]`; each reads the
//! field's JSON value once and converts it.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde_json::Value;

/// A value that does not deserialize becomes `T::default()`.
pub fn default_on_error<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// `null` becomes `T::default()`; other values must fit.
pub fn default_on_null<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    match Value::deserialize(d)? {
        Value::Null => Ok(T::default()),
        v => serde_json::from_value(v).map_err(D::Error::custom),
    }
}

/// An array whose items that do not fit are dropped; `null` is an empty array. Any other value
/// is an error (or the default, with `on_error`).
fn items<T: DeserializeOwned>(v: Value) -> Result<Vec<T>, String> {
    match v {
        Value::Array(items) => Ok(items
            .into_iter()
            .filter_map(|i| serde_json::from_value(i).ok())
            .collect()),
        Value::Null => Ok(Vec::new()),
        other => Err(format!("expected an array, found {other}")),
    }
}

/// Drops array items that do not fit.
pub fn skip_invalid_items<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    items(Value::deserialize(d)?).map_err(D::Error::custom)
}

/// Drops array items that do not fit, for an optional array (absent stays `None`; `null` too).
pub fn skip_invalid_items_opt<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => items(v).map(Some).map_err(D::Error::custom),
    }
}

/// Drops array items that do not fit; any other value becomes empty.
pub fn skip_invalid_items_or_default<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(items(Value::deserialize(d)?).unwrap_or_default())
}

/// Drops array items that do not fit, for an optional array; any other value becomes `None`.
pub fn skip_invalid_items_opt_or_default<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => Ok(items(v).ok()),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq, Default)]
    struct S {
        #[serde(default, deserialize_with = "super::default_on_error")]
        n: Option<u32>,
        #[serde(default, deserialize_with = "super::default_on_null")]
        list: Vec<u32>,
        #[serde(default, deserialize_with = "super::skip_invalid_items_opt")]
        items: Option<Vec<u32>>,
        #[serde(default, deserialize_with = "super::skip_invalid_items_or_default")]
        lax: Vec<u32>,
    }

    fn s(text: &str) -> Result<S, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn each_hint_does_what_it_says() {
        assert_eq!(s(r#"{"n":"bad"}"#).unwrap().n, None);
        assert_eq!(s(r#"{"n":3}"#).unwrap().n, Some(3));
        assert_eq!(s(r#"{"list":null}"#).unwrap().list, Vec::<u32>::new());
        assert!(s(r#"{"list":"bad"}"#).is_err());
        assert_eq!(s(r#"{"items":[1,"x",2]}"#).unwrap().items, Some(vec![1, 2]));
        assert!(s(r#"{"items":7}"#).is_err());
        assert_eq!(s(r#"{"lax":7}"#).unwrap().lax, Vec::<u32>::new());
        assert_eq!(s("{}").unwrap(), S::default());
    }
}

//! [`Patch`]: a field with patch semantics, which ACP v2 gives three states.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A field of an update with patch semantics (ACP v2's `ToolCallUpdate`, `SessionInfoUpdate`,
/// `UsageUpdate`'s `cost`, the `_meta` of updates, …): **absent** leaves the receiver's value
/// as it is, **`null`** clears it, **a value** replaces it. An `Option` has only two states
/// and could not write the `null`; a `Patch` writes each as it is.
///
/// ```
/// use sacp_schema::Patch;
///
/// #[derive(serde::Serialize)]
/// struct Update {
///     #[serde(default, skip_serializing_if = "Patch::is_absent")]
///     title: Patch<String>,
///     #[serde(default, skip_serializing_if = "Patch::is_absent")]
///     kind: Patch<String>,
/// }
/// let cleared = Update { title: Patch::Null, kind: Patch::Absent };
/// assert_eq!(serde_json::to_string(&cleared).unwrap(), r#"{"title":null}"#);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Patch<T> {
    /// Not in the message: the receiver keeps what it has.
    #[default]
    Absent,
    /// `null`: the receiver clears it (or resets it to its default, as the field says).
    Null,
    /// A value: the receiver takes it.
    Value(T),
}

impl<T> Patch<T> {
    /// Whether it is absent (what `skip_serializing_if` asks).
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Patch::Null)
    }

    /// The value, if it is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Patch::Value(value) => Some(value),
            Patch::Absent | Patch::Null => None,
        }
    }

    /// The value, if it is one, by value.
    pub fn into_value(self) -> Option<T> {
        match self {
            Patch::Value(value) => Some(value),
            Patch::Absent | Patch::Null => None,
        }
    }

    /// The value mutably, if it is one.
    pub fn value_mut(&mut self) -> Option<&mut T> {
        match self {
            Patch::Value(value) => Some(value),
            Patch::Absent | Patch::Null => None,
        }
    }
}

impl<T> From<T> for Patch<T> {
    fn from(value: T) -> Self {
        Patch::Value(value)
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Patch::Value(value) => value.serialize(serializer),
            // Absent is skipped by the field's `skip_serializing_if`; written alone, it is null.
            Patch::Absent | Patch::Null => serializer.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    /// `null` is [`Patch::Null`], a value [`Patch::Value`]; an absent field is
    /// [`Patch::Absent`] through the field's `#[serde(default)]`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            Some(value) => Patch::Value(value),
            None => Patch::Null,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
    struct Update {
        #[serde(default, skip_serializing_if = "Patch::is_absent")]
        title: Patch<String>,
    }

    #[test]
    fn three_states_read_and_write_as_they_are() {
        for (json, patch) in [
            (r#"{}"#, Patch::Absent),
            (r#"{"title":null}"#, Patch::Null),
            (r#"{"title":"t"}"#, Patch::Value("t".to_owned())),
        ] {
            let read: Update = serde_json::from_str(json).unwrap();
            assert_eq!(read.title, patch, "{json}");
            assert_eq!(serde_json::to_string(&read).unwrap(), json);
        }
    }
}

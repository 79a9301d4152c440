//! Enums whose values cross every boundary as their names: statuses, outcomes, refusal
//! reasons, the tabs' changes. One table of names per enum, declared once by `names!`: read
//! and written through it (serde), listed (`ALL`), and declared in TypeScript as the union of
//! the names (tsify, on wasm32; the names are the variants' in snake_case, which a test of
//! each enum checks).

/// Declares `enum $name` with `$variant = "name"` pairs: `ALL`, `from_name`, `as_str`, and
/// serde's `Serialize` and `Deserialize` through them (a name it does not know is refused with
/// `$what`). `as "Ts"` renames its TypeScript declaration.
macro_rules! names {
    (
        $(#[$doc:meta])*
        $vis:vis enum $name:ident ($what:literal) $(as $ts:literal)? {
            $($(#[$vdoc:meta])* $variant:ident = $text:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(
            target_arch = "wasm32",
            derive(tsify::Tsify),
            serde(rename_all = "snake_case")
        )]
        $(#[cfg_attr(target_arch = "wasm32", tsify(rename = $ts))])?
        $vis enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value `name` names, if any.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// Its name, as it crosses every boundary.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl From<$name> for &'static str {
            fn from(value: $name) -> Self {
                value.as_str()
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <String as serde::Deserialize>::deserialize(d)?;
                $name::from_name(&name).ok_or_else(|| serde::de::Error::custom($what))
            }
        }
    };
}

pub(crate) use names;

/// `CamelCase` as `snake_case`: what tsify's `rename_all` makes of a variant's name, which
/// every table's names must be (checked by each enum's test).
#[cfg(test)]
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Asserts that every value of an enum declared by [`names!`] is named as its TypeScript
/// declaration names it, and reads back from its name.
#[cfg(test)]
macro_rules! assert_names {
    ($name:ident) => {
        for value in $name::ALL {
            let text = value.as_str();
            assert_eq!(
                text,
                $crate::core::names::snake_case(&format!("{value:?}")),
                "{value:?}"
            );
            assert_eq!($name::from_name(text), Some(*value));
            assert_eq!(serde_json::to_value(value).unwrap(), text);
            assert_eq!(
                serde_json::from_value::<$name>(serde_json::json!(text)).unwrap(),
                *value
            );
        }
        assert_eq!($name::from_name("no such name"), None);
        assert!(serde_json::from_value::<$name>(serde_json::json!("no such name")).is_err());
    };
}

#[cfg(test)]
pub(crate) use assert_names;

//! Setters the builders share (tools, prompts, resources, resource templates,
//! and `require_scopes` of the auth settings): each builder names the ones it
//! has and gives their docs.

/// Builder methods, each with the docs written before it:
///
/// - `text field;` sets `self.definition.field` to anything that converts
///   into a `String`;
/// - `value field: Type;` sets `self.definition.field` to a `Type`;
/// - `icon;` adds an icon to `self.definition.icons`;
/// - `require_scopes;` adds scopes to `self.required_scopes`.
macro_rules! setters {
    () => {};
    ($(#[$doc:meta])* text $field:ident; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn $field(mut self, $field: impl Into<String>) -> Self {
            self.definition.$field = Some($field.into());
            self
        }
        $crate::setters::setters! { $($rest)* }
    };
    ($(#[$doc:meta])* value $field:ident: $type:ty; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn $field(mut self, $field: $type) -> Self {
            self.definition.$field = Some($field);
            self
        }
        $crate::setters::setters! { $($rest)* }
    };
    ($(#[$doc:meta])* icon; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn icon(mut self, icon: ::toolwire_protocol::Icon) -> Self {
            self.definition
                .icons
                .get_or_insert_with(Vec::new)
                .push(icon);
            self
        }
        $crate::setters::setters! { $($rest)* }
    };
    ($(#[$doc:meta])* require_scopes; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn require_scopes<I, S>(mut self, scopes: I) -> Self
        where
            I: IntoIterator<Item = S>,
            S: Into<String>,
        {
            self.required_scopes
                .extend(scopes.into_iter().map(Into::into));
            self
        }
        $crate::setters::setters! { $($rest)* }
    };
}

pub(crate) use setters;

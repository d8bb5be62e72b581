//! Tool name rules: 1 to 128 characters from `A-Z a-z 0-9 _ - .`.

/// The longest allowed tool name, in characters.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Why a tool name breaks the naming rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is the empty string.
    #[error("tool name is empty; a tool name must be 1 to 128 characters long")]
    Empty,
    /// The name has more than [`MAX_TOOL_NAME_LEN`] characters.
    #[error("tool name is {len} characters long; a tool name must be 1 to 128 characters long")]
    TooLong {
        /// The name's length in characters.
        len: usize,
    },
    /// The name contains a character outside `A-Z a-z 0-9 _ - .`.
    #[error(
        "tool name contains {ch:?} at character {index}; only ASCII letters, digits, \
         '_', '-' and '.' are allowed"
    )]
    InvalidChar {
        /// The first offending character.
        ch: char,
        /// Its position, counted in characters from 0.
        index: usize,
    },
}

/// Checks a tool name against the MCP naming rules.
///
/// ```
/// use toolwire_schema::{check_tool_name, NameError};
/// assert!(check_tool_name("admin.tools.list").is_ok());
/// assert_eq!(check_tool_name("get user"), Err(NameError::InvalidChar { ch: ' ', index: 3 }));
/// ```
///
/// # Errors
///
/// The first rule the name breaks, checked in the order empty, too long, invalid character.
pub fn check_tool_name(name: &str) -> Result<(), NameError> {
    let len = name.chars().count();
    if len == 0 {
        return Err(NameError::Empty);
    }
    if len > MAX_TOOL_NAME_LEN {
        return Err(NameError::TooLong { len });
    }
    match name.chars().enumerate().find(|(_, ch)| !is_name_char(*ch)) {
        Some((index, ch)) => Err(NameError::InvalidChar { ch, index }),
        None => Ok(()),
    }
}

fn is_name_char(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-' | '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_are_valid() {
        for name in ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a-b", "0"] {
            assert_eq!(check_tool_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn length_bounds() {
        assert_eq!(check_tool_name(""), Err(NameError::Empty));
        assert_eq!(check_tool_name("a"), Ok(()));
        assert_eq!(check_tool_name(&"a".repeat(128)), Ok(()));
        assert_eq!(
            check_tool_name(&"a".repeat(129)),
            Err(NameError::TooLong { len: 129 })
        );
    }

    #[test]
    fn invalid_characters() {
        assert_eq!(
            check_tool_name("get user"),
            Err(NameError::InvalidChar { ch: ' ', index: 3 })
        );
        assert_eq!(
            check_tool_name("a,b"),
            Err(NameError::InvalidChar { ch: ',', index: 1 })
        );
        assert_eq!(
            check_tool_name("héllo"),
            Err(NameError::InvalidChar { ch: 'é', index: 1 })
        );
        assert_eq!(
            check_tool_name("tool/x"),
            Err(NameError::InvalidChar { ch: '/', index: 4 })
        );
        assert_eq!(
            check_tool_name("x\n"),
            Err(NameError::InvalidChar { ch: '\n', index: 1 })
        );
    }

    #[test]
    fn length_counts_characters_not_bytes() {
        // 128 characters but 256 bytes: length is fine, the character is not.
        let name = "é".repeat(128);
        assert_eq!(
            check_tool_name(&name),
            Err(NameError::InvalidChar { ch: 'é', index: 0 })
        );
    }

    #[test]
    fn messages_name_the_rule() {
        assert_eq!(
            NameError::Empty.to_string(),
            "tool name is empty; a tool name must be 1 to 128 characters long"
        );
        assert_eq!(
            NameError::TooLong { len: 129 }.to_string(),
            "tool name is 129 characters long; a tool name must be 1 to 128 characters long"
        );
        assert_eq!(
            NameError::InvalidChar { ch: ',', index: 1 }.to_string(),
            "tool name contains ',' at character 1; only ASCII letters, digits, '_', '-' and '.' are allowed"
        );
    }
}

//! The toolwire client SDK.

//! The toolwire server SDK.

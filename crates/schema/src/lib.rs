//! JSON Schema handling for toolwire.

//! Wire types for the Model Context Protocol, revision 2026-07-28.

//! Integration tests of the candidate cache.

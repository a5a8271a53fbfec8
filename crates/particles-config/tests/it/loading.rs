//! The public API on files in temporary directories.

//! Integration tests of particles-config.

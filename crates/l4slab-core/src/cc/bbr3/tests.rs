//! Mechanism tests of BBRv3.

//! Black-box tests: each starts the real `countersign` binary on a random
//! port with a fresh data directory and drives it over HTTP.

mod helpers;

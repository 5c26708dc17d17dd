//! People come and go (docs/PEOPLE.md): provisioning from an identity
//! provider over SCIM 2.0 (`scim`), offboarding that takes effect at once
//! and coming back (`lifecycle`), and what the identity provider's groups
//! grant (`groups`).

pub mod actors;
pub mod client_ip;
pub mod groups;
pub mod lifecycle;
pub mod passkeys;
pub mod password;
pub mod scim;
pub mod throttle;

//! Console roles, each scoped to one tenant.

use serde::{Deserialize, Serialize};
use std::fmt;
use strum::{EnumCount, EnumString, IntoStaticStr, VariantArray};

// The names (`as_str`, `parse`, serde's) are the variants' in lowercase:
// strum and serde each derive them by the same rule (tests pin every one).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    EnumCount,
    EnumString,
    IntoStaticStr,
    VariantArray,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Role {
    /// Reads the queue and proposals.
    Viewer,
    /// Approves and rejects, within their limits.
    Approver,
    /// Proposes and confirms registry changes; resolves operations.
    Admin,
    /// Reads the queue and proposals and exports their proof bundles
    /// (docs/EVIDENCE.md); decides nothing.
    Auditor,
}

impl Role {
    /// Every role, in declaration order.
    pub const ALL: [Role; Role::COUNT] = *Role::VARIANTS.first_chunk().expect("COUNT variants");

    pub fn as_str(&self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Role> {
        s.parse().ok()
    }

    /// Whether someone with `roles` may export a proposal's proof bundle
    /// from the console: admins and auditors.
    pub fn exports_evidence(roles: &[Role]) -> bool {
        roles.iter().any(|r| matches!(r, Role::Admin | Role::Auditor))
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The console's wasm moves its page data with `miniserde` (docs/BENCHMARKS.md,
/// "Hydrate wasm size"): a role is its name, as in serde's form.
#[cfg(feature = "miniserde")]
mod mini {
    use super::Role;
    use miniserde::de::{Deserialize, Visitor};
    use miniserde::ser::{Fragment, Serialize};

    miniserde::make_place!(Place);

    impl Visitor for Place<Role> {
        fn string(&mut self, s: &str) -> miniserde::Result<()> {
            self.out = Some(Role::parse(s).ok_or(miniserde::Error)?);
            Ok(())
        }
    }

    impl Deserialize for Role {
        fn begin(out: &mut Option<Self>) -> &mut dyn Visitor {
            Place::new(out)
        }
    }

    impl Serialize for Role {
        fn begin(&self) -> Fragment<'_> {
            Fragment::Str(self.as_str().into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
            assert_eq!(serde_json::to_value(role).unwrap(), serde_json::json!(role.as_str()));
        }
        assert_eq!(Role::parse("Admin"), None, "exact names only");
        assert_eq!(Role::parse("owner"), None);
    }

    /// The stored and wire names, every one, in `ALL`'s order (each variant once).
    #[test]
    fn every_role_has_its_name_and_all_lists_each_once() {
        assert_eq!(Role::ALL.map(|r| r.as_str()), ["viewer", "approver", "admin", "auditor"]);
    }

    #[cfg(feature = "miniserde")]
    #[test]
    fn miniserde_reads_and_writes_the_same_names_as_serde() {
        for role in Role::ALL {
            let text = miniserde::json::to_string(&role);
            assert_eq!(text, serde_json::to_string(&role).unwrap());
            assert_eq!(miniserde::json::from_str::<Role>(&text).unwrap(), role);
        }
        assert!(miniserde::json::from_str::<Role>("\"owner\"").is_err());
    }
}

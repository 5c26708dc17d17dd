//! Which rail pays for whom: the default rail (`[rail]`), the named rails
//! (`[rails.NAME]`) and each tenant's choice (`tenants.ID.rail`).
//!
//! An operation records the name of the rail it was submitted to, and is
//! reconciled on that rail whatever the tenant uses later: switching a
//! tenant to another rail never sends an open payment's lookups elsewhere.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Rail;

pub use crate::config::rails::DEFAULT_RAIL;

/// The process's rails.
#[derive(Clone)]
pub struct Rails {
    default: Arc<dyn Rail>,
    named: BTreeMap<String, Arc<dyn Rail>>,
    /// Tenant id → rail name (tenants not listed use the default).
    tenants: BTreeMap<String, String>,
}

impl std::fmt::Debug for Rails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rails")
            .field("named", &self.named.keys().collect::<Vec<_>>())
            .field("tenants", &self.tenants)
            .finish_non_exhaustive()
    }
}

impl Rails {
    /// One rail for every tenant.
    pub fn single(rail: Arc<dyn Rail>) -> Rails {
        Rails { default: rail, named: BTreeMap::new(), tenants: BTreeMap::new() }
    }

    /// The default rail, the named ones, and which tenant uses which (a
    /// name must be one of `named`, or [`DEFAULT_RAIL`]; the settings'
    /// validation makes sure of it).
    pub fn new(
        default: Arc<dyn Rail>,
        named: BTreeMap<String, Arc<dyn Rail>>,
        tenants: BTreeMap<String, String>,
    ) -> Rails {
        Rails { default, named, tenants }
    }

    /// The rail new payments of `tenant` go to, and its name.
    pub fn for_tenant(&self, tenant: &str) -> (&str, &dyn Rail) {
        match self.tenants.get(tenant).and_then(|name| self.named.get_key_value(name)) {
            Some((name, rail)) => (name.as_str(), rail.as_ref()),
            None => (DEFAULT_RAIL, self.default.as_ref()),
        }
    }

    /// The rail an operation was submitted to (`None`: recorded before
    /// rails had names, the default). An unknown name is `None`: the rail
    /// was removed from the configuration, and the operation waits for it.
    pub fn by_name(&self, name: Option<&str>) -> Option<&dyn Rail> {
        match name {
            None | Some(DEFAULT_RAIL) => Some(self.default.as_ref()),
            Some(name) => self.named.get(name).map(|r| r.as_ref()),
        }
    }

    /// The default rail.
    pub fn default_rail(&self) -> &dyn Rail {
        self.default.as_ref()
    }

    /// Every rail, the default first, with its name.
    pub fn all(&self) -> impl Iterator<Item = (&str, &dyn Rail)> {
        std::iter::once((DEFAULT_RAIL, self.default.as_ref()))
            .chain(self.named.iter().map(|(name, rail)| (name.as_str(), rail.as_ref())))
    }
}

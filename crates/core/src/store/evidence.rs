//! The salts of a proposal's account commitments (migration 0020,
//! docs/EVIDENCE.md "Commitments") and the audit entries a proof bundle
//! proves.

use super::guarded::Guarded;
use super::{scalar, Builder, Conn, Pool, Result, StoreError};

/// The salts of `proposal_id`'s commitments to `fields`, in their order:
/// each made (32 random bytes) the first time it is asked for and the same
/// ever after. One statement: a conflict keeps the stored salt and returns
/// it (the no-op update is what makes `RETURNING` answer on a conflict).
pub async fn salts<const N: usize>(conn: &mut Conn, proposal_id: &str, fields: [&str; N]) -> Result<[[u8; 32]; N]> {
    let mut q = Builder::new("INSERT INTO evidence_salts (proposal_id, field, salt) VALUES ");
    for (i, field) in fields.iter().enumerate() {
        q.push(if i == 0 { "(" } else { ", (" });
        q.push_bind(proposal_id).push(", ").push_bind(*field).push(", ").push_bind(rand::random::<[u8; 32]>().to_vec());
        q.push(")");
    }
    q.push(" ON CONFLICT (proposal_id, field) DO UPDATE SET salt = evidence_salts.salt RETURNING field, salt");
    let rows = q.build().fetch_all(&mut *conn).await?;
    let mut out = [[0u8; 32]; N];
    for (i, field) in fields.iter().enumerate() {
        let row = rows
            .iter()
            .find(|r| r.try_get::<String>("field").is_ok_and(|f| f == *field))
            .ok_or_else(|| StoreError::corrupt("evidence_salts.field", "no salt came back"))?;
        out[i] = row
            .try_get::<Vec<u8>>("salt")?
            .try_into()
            .map_err(|_| StoreError::corrupt("evidence_salts.salt", "is not 32 bytes"))?;
    }
    Ok(out)
}

/// The salts already kept for `proposal_id`'s `fields`, read outside a
/// transaction; `None` unless every one is there.
pub async fn kept<const N: usize>(pool: &Pool, proposal_id: &str, fields: [&str; N]) -> Result<Option<[[u8; 32]; N]>> {
    let mut q = Builder::new("SELECT field, salt FROM evidence_salts WHERE proposal_id = ");
    q.push_bind(proposal_id).push(" AND field IN (");
    q.push_list(fields);
    q.push(")");
    let rows = q.build().fetch_all(pool).await?;
    let mut out = [[0u8; 32]; N];
    for (i, field) in fields.iter().enumerate() {
        let Some(row) = rows.iter().find(|r| r.try_get::<String>("field").is_ok_and(|f| f == *field)) else {
            return Ok(None);
        };
        out[i] = row
            .try_get::<Vec<u8>>("salt")?
            .try_into()
            .map_err(|_| StoreError::corrupt("evidence_salts.salt", "is not 32 bytes"))?;
    }
    Ok(Some(out))
}

/// Into a one-command transaction: keep `salts` for `fields` where none is
/// kept yet, guarded by the kept ones being these.
pub fn keep_at_once<'q, const N: usize>(
    g: &mut Guarded<'q>,
    proposal_id: &'q str,
    fields: [&'q str; N],
    salts: &[[u8; 32]; N],
) {
    g.statement(|q| {
        q.push("INSERT INTO evidence_salts (proposal_id, field, salt) VALUES ");
        for (i, (field, salt)) in fields.iter().zip(salts).enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(proposal_id).push(", ").push_bind(*field).push(", ").push_bind(salt.to_vec()).push(")");
        }
        q.push(" ON CONFLICT (proposal_id, field) DO NOTHING");
    });
    g.guard("the salts kept are these", |q| {
        q.push("(SELECT count(*) FROM evidence_salts WHERE proposal_id = ").push_bind(proposal_id).push(" AND (");
        for (i, (field, salt)) in fields.iter().zip(salts).enumerate() {
            q.push(if i == 0 { "(field = " } else { " OR (field = " });
            q.push_bind(*field).push(" AND salt = ").push_bind(salt.to_vec()).push(")");
        }
        q.push(format!(")) = {N}"));
    });
}

/// The sequence numbers of the entries about `proposal_id`, oldest first.
pub async fn entries_of(pool: &Pool, proposal_id: &str) -> Result<Vec<i64>> {
    Ok(scalar("SELECT seq FROM audit_log WHERE proposal_id = ? ORDER BY seq").bind(proposal_id).fetch_all(pool).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn salts_are_made_once_per_field() {
        for db in crate::store::test_pg::each_backend("salts_are_made_once_per_field").await {
            let mut tx = db.begin().await.unwrap();
            let first = salts(&mut tx, "prop_1", ["destination"]).await.unwrap()[0];
            assert_eq!(
                salts(&mut tx, "prop_1", ["destination"]).await.unwrap()[0],
                first,
                "asked again, the same salt"
            );
            assert_ne!(salts(&mut tx, "prop_1", ["source_account"]).await.unwrap()[0], first, "another field, another");
            assert_ne!(salts(&mut tx, "prop_2", ["destination"]).await.unwrap()[0], first, "another proposal, another");
            let [source, destination] = salts(&mut tx, "prop_1", ["source_account", "destination"]).await.unwrap();
            assert_eq!(destination, first, "asked with another field at once, the same salt in its place");
            let [source_again, _] = salts(&mut tx, "prop_1", ["source_account", "destination"]).await.unwrap();
            assert_eq!(source_again, source);
            let [new] = salts(&mut tx, "prop_3", ["destination"]).await.unwrap();
            let [other, new_again] = salts(&mut tx, "prop_3", ["source_account", "destination"]).await.unwrap();
            assert_eq!(new_again, new, "a kept salt and a fresh one in one statement");
            assert_ne!(other, new);
            tx.commit().await.unwrap();
            let mut tx = db.begin().await.unwrap();
            assert_eq!(salts(&mut tx, "prop_1", ["destination"]).await.unwrap()[0], first, "{}: kept", db.backend);
        }
    }
}

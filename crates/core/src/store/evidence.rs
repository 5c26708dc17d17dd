//! The salts of a proposal's account commitments (migration 0020,
//! docs/EVIDENCE.md "Commitments") and the audit entries a proof bundle
//! proves.

use super::{scalar, Conn, Pool, Result, StoreError};

/// The salt of `proposal_id`'s commitment to `field`, made (32 random
/// bytes) the first time it is asked for and the same ever after.
pub async fn salt(conn: &mut Conn, proposal_id: &str, field: &str) -> Result<[u8; 32]> {
    let fresh: [u8; 32] = rand::random();
    // One statement: a conflict keeps the stored salt and returns it (the
    // no-op update is what makes `RETURNING` answer on a conflict).
    let kept: Vec<u8> = scalar(
        "INSERT INTO evidence_salts (proposal_id, field, salt) VALUES (?, ?, ?)
         ON CONFLICT (proposal_id, field) DO UPDATE SET salt = evidence_salts.salt RETURNING salt",
    )
    .bind(proposal_id)
    .bind(field)
    .bind(fresh.to_vec())
    .fetch_one(&mut *conn)
    .await?;
    kept.try_into().map_err(|_| StoreError::corrupt("evidence_salts.salt", "is not 32 bytes"))
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
            let first = salt(&mut tx, "prop_1", "destination").await.unwrap();
            assert_eq!(salt(&mut tx, "prop_1", "destination").await.unwrap(), first, "asked again, the same salt");
            assert_ne!(salt(&mut tx, "prop_1", "source_account").await.unwrap(), first, "another field, another");
            assert_ne!(salt(&mut tx, "prop_2", "destination").await.unwrap(), first, "another proposal, another");
            tx.commit().await.unwrap();
            let mut tx = db.begin().await.unwrap();
            assert_eq!(salt(&mut tx, "prop_1", "destination").await.unwrap(), first, "{}: kept", db.backend);
        }
    }
}

-- Reconciliation claimed once per operation across instances
-- (server/src/operations.rs, docs/DECISIONS.md "One rail call at a time
-- per operation").
--
-- While `claimed_until` is in the future one process is calling the rail for
-- the operation (the commit that recorded it, or a reconciliation pass) and
-- no other reconciles it. The claim is a lease: a process that dies
-- mid-call leaves the operation to others once it passes. NULL: unclaimed.
ALTER TABLE operations ADD COLUMN claimed_until TEXT;

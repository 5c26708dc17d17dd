-- The transparency log (issue 26, docs/EVIDENCE.md): every audit entry is a
-- leaf of an append-only Merkle tree (RFC 9162 section 2.1), leaf i being
-- audit entry seq i + 1. The sequencer appends leaves in the background and
-- signs a checkpoint for each new size.
--
-- `tlog_nodes` holds the hash of every perfect subtree: `height` h, `idx` i
-- covers leaves [i * 2^h, (i + 1) * 2^h); height 0 holds the leaf hashes.
-- Roots and proofs of any size are computed from these.
CREATE TABLE tlog_nodes (
    height  BIGINT NOT NULL,
    idx     BIGINT NOT NULL,
    hash    BYTEA NOT NULL,
    PRIMARY KEY (height, idx)
);

-- One signed checkpoint per tree size the sequencer reached: the C2SP
-- signed note, as served. The largest `size` is the tree's size.
CREATE TABLE tlog_checkpoints (
    size  BIGINT PRIMARY KEY,
    root  BYTEA NOT NULL,
    note  TEXT NOT NULL,
    at    TEXT NOT NULL
);

//! The Merkle tree of RFC 9162 section 2.1: SHA-256, a leaf hashed with the
//! prefix 0x00, an interior node with 0x01; the tree over `n` leaves splits
//! at the largest power of two below `n`.
//!
//! The store keeps the hash of every *perfect* subtree (a power-of-two run
//! of leaves starting at a multiple of its size): level `l`, index `i`
//! covers leaves `[i·2^l, (i+1)·2^l)`. Every hash a root or a proof needs is
//! built from O(log n) of them, so the functions here take the perfect
//! nodes through [`Nodes`] and compute the rest. [`needed`] lists the
//! perfect nodes a computation reads, so the store fetches them in one query
//! first.
//!
//! The verifiers follow the algorithms of sections 2.1.3.2 and 2.1.4.2
//! step by step: they are what an outside checker runs, and they never read
//! the store.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

pub type Hash = [u8; 32];

/// The hash of a leaf holding `data`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// The hash of an interior node over `left` and `right`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// A perfect subtree: `level` (its height) and `index` (its place among the
/// subtrees of that level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId {
    pub level: u32,
    pub index: u64,
}

/// Where the perfect subtrees' hashes come from.
pub trait Nodes {
    fn node(&self, id: NodeId) -> Hash;
}

/// The largest power of two strictly below `n` (n ≥ 2).
fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

/// MTH of leaves `[lo, hi)`, a subtree of the canonical tree (so `lo` is a
/// multiple of the largest power of two not above `hi - lo`).
fn range(nodes: &dyn Nodes, lo: u64, hi: u64) -> Hash {
    let n = hi - lo;
    if n.is_power_of_two() && lo.is_multiple_of(n) {
        return nodes.node(NodeId { level: n.trailing_zeros(), index: lo >> n.trailing_zeros() });
    }
    let k = split(n);
    node_hash(&range(nodes, lo, lo + k), &range(nodes, lo + k, hi))
}

/// The root of the first `size` leaves.
pub fn root(nodes: &dyn Nodes, size: u64) -> Hash {
    if size == 0 {
        return empty_root();
    }
    range(nodes, 0, size)
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves
/// (PATH of RFC 9162 section 2.1.3.1), leaf-side first.
pub fn inclusion_proof(nodes: &dyn Nodes, index: u64, size: u64) -> Option<Vec<Hash>> {
    if index >= size {
        return None;
    }
    let mut path = Vec::new();
    path_of(nodes, index, 0, size, &mut path);
    Some(path)
}

fn path_of(nodes: &dyn Nodes, m: u64, lo: u64, hi: u64, out: &mut Vec<Hash>) {
    let n = hi - lo;
    if n <= 1 {
        return;
    }
    let k = split(n);
    if m < k {
        path_of(nodes, m, lo, lo + k, out);
        out.push(range(nodes, lo + k, hi));
    } else {
        path_of(nodes, m - k, lo + k, hi, out);
        out.push(range(nodes, lo, lo + k));
    }
}

/// The consistency proof from the tree of `first` leaves to that of
/// `second` (PROOF of RFC 9162 section 2.1.4.1). Empty when `first` is 0 or
/// equal to `second`.
pub fn consistency_proof(nodes: &dyn Nodes, first: u64, second: u64) -> Option<Vec<Hash>> {
    if first > second {
        return None;
    }
    let mut proof = Vec::new();
    if first > 0 && first < second {
        subproof(nodes, first, 0, second, true, &mut proof);
    }
    Some(proof)
}

fn subproof(nodes: &dyn Nodes, m: u64, lo: u64, hi: u64, whole: bool, out: &mut Vec<Hash>) {
    let n = hi - lo;
    if m == n {
        if !whole {
            out.push(range(nodes, lo, hi));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(nodes, m, lo, lo + k, whole, out);
        out.push(range(nodes, lo + k, hi));
    } else {
        subproof(nodes, m - k, lo + k, hi, false, out);
        out.push(range(nodes, lo, lo + k));
    }
}

/// The perfect nodes `compute` reads, without their hashes: run it once
/// with this to learn what to fetch, then again on what was fetched.
pub fn needed<T>(compute: impl FnOnce(&dyn Nodes) -> T) -> BTreeSet<NodeId> {
    let recorder = Recorder::default();
    compute(&recorder);
    recorder.seen.into_inner()
}

/// [`Nodes`] that notes what is asked and answers zeros.
#[derive(Default)]
pub struct Recorder {
    seen: std::cell::RefCell<BTreeSet<NodeId>>,
}

impl Nodes for Recorder {
    fn node(&self, id: NodeId) -> Hash {
        self.seen.borrow_mut().insert(id);
        [0; 32]
    }
}

/// [`Nodes`] from a map (what the store fetched). A node it lacks is a bug
/// in the caller (it fetched less than [`needed`] listed): it panics.
impl Nodes for std::collections::BTreeMap<NodeId, Hash> {
    fn node(&self, id: NodeId) -> Hash {
        *self.get(&id).unwrap_or_else(|| panic!("perfect node {id:?} was not fetched"))
    }
}

/// Checks that `leaf` (a leaf hash) is leaf `index` of the tree of `size`
/// leaves whose root is `root` (RFC 9162 section 2.1.3.2).
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, path: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == *root
}

/// Checks that the tree of `second` leaves with root `second_root` extends
/// the tree of `first` leaves with root `first_root` (RFC 9162 section
/// 2.1.4.2).
pub fn verify_consistency(first: u64, second: u64, proof: &[Hash], first_root: &Hash, second_root: &Hash) -> bool {
    if first > second {
        return false;
    }
    if first == second {
        return proof.is_empty() && first_root == second_root;
    }
    if first == 0 {
        // Every tree extends the empty one.
        return proof.is_empty();
    }
    if proof.is_empty() {
        return false;
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if first.is_power_of_two() {
        path.push(*first_root);
    }
    path.extend_from_slice(proof);
    let (mut f, mut s) = (first - 1, second - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (path[0], path[0]);
    for c in &path[1..] {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    fr == *first_root && sr == *second_root && s == 0
}

/// The perfect nodes that appending leaves completes: given the hashes of
/// new leaves starting at index `start` and, for each level, the left
/// sibling a new node pairs with when it starts at an odd index
/// (`left_of(level, index)`, read from the store), every new perfect node of
/// every level, leaves included.
pub fn grow(start: u64, leaves: &[Hash], mut left_of: impl FnMut(NodeId) -> Hash) -> Vec<(NodeId, Hash)> {
    let mut out: Vec<(NodeId, Hash)> = Vec::new();
    let (mut level, mut first, mut row) = (0u32, start, leaves.to_vec());
    while !row.is_empty() {
        out.extend(row.iter().enumerate().map(|(i, h)| (NodeId { level, index: first + i as u64 }, *h)));
        // Pair from an even index: a new node at an odd one pairs with its
        // stored left sibling.
        let (pair_start, pairs): (u64, Vec<Hash>) = if first % 2 == 1 {
            let mut with_left = vec![left_of(NodeId { level, index: first - 1 })];
            with_left.extend_from_slice(&row);
            (first - 1, with_left)
        } else {
            (first, row)
        };
        row = pairs.chunks_exact(2).map(|c| node_hash(&c[0], &c[1])).collect();
        first = pair_start / 2;
        level += 1;
    }
    out
}

/// The left siblings [`grow`] will ask for when leaves are appended at
/// `start` (`count` of them): at most one per level.
pub fn left_siblings(start: u64, count: u64) -> Vec<NodeId> {
    let mut out = Vec::new();
    let (mut level, mut first, mut n) = (0u32, start, count);
    while n > 0 {
        let (pair_start, len) = if first % 2 == 1 {
            out.push(NodeId { level, index: first - 1 });
            (first - 1, n + 1)
        } else {
            (first, n)
        };
        n = len / 2;
        first = pair_start / 2;
        level += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// MTH straight from the definition, over the leaf hashes.
    fn reference_root(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => empty_root(),
            1 => leaves[0],
            n => {
                let k = split(n as u64) as usize;
                node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    fn reference_path(m: usize, leaves: &[Hash]) -> Vec<Hash> {
        let n = leaves.len();
        if n <= 1 {
            return vec![];
        }
        let k = split(n as u64) as usize;
        if m < k {
            let mut p = reference_path(m, &leaves[..k]);
            p.push(reference_root(&leaves[k..]));
            p
        } else {
            let mut p = reference_path(m - k, &leaves[k..]);
            p.push(reference_root(&leaves[..k]));
            p
        }
    }

    fn reference_subproof(m: usize, leaves: &[Hash], whole: bool) -> Vec<Hash> {
        let n = leaves.len();
        if m == n {
            return if whole { vec![] } else { vec![reference_root(leaves)] };
        }
        let k = split(n as u64) as usize;
        if m <= k {
            let mut p = reference_subproof(m, &leaves[..k], whole);
            p.push(reference_root(&leaves[k..]));
            p
        } else {
            let mut p = reference_subproof(m - k, &leaves[k..], false);
            p.push(reference_root(&leaves[..k]));
            p
        }
    }

    /// The perfect nodes of `leaves`, built by appending them in uneven
    /// batches (as the sequencer does).
    fn grown(leaves: &[Hash]) -> BTreeMap<NodeId, Hash> {
        let mut nodes = BTreeMap::new();
        let mut start = 0usize;
        let mut batch = 1usize;
        while start < leaves.len() {
            let end = (start + batch).min(leaves.len());
            let asked = left_siblings(start as u64, (end - start) as u64);
            let mut seen = Vec::new();
            let new = grow(start as u64, &leaves[start..end], |id| {
                seen.push(id);
                nodes[&id]
            });
            assert_eq!(seen, asked, "left_siblings lists what grow reads");
            nodes.extend(new);
            start = end;
            batch = batch % 5 + 2;
        }
        nodes
    }

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(format!("leaf {i}").as_bytes())).collect()
    }

    /// RFC 6962's test tree (the certificate-transparency project's eight
    /// leaves) and its roots at every size.
    #[test]
    fn the_rfc_test_tree_has_its_known_roots() {
        let data: [&[u8]; 8] = [
            b"",
            &[0x00],
            &[0x10],
            &[0x20, 0x21],
            &[0x30, 0x31],
            &[0x40, 0x41, 0x42, 0x43],
            &[0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57],
            &[0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f],
        ];
        let roots = [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ];
        let hashes: Vec<Hash> = data.iter().map(|d| leaf_hash(d)).collect();
        let nodes = grown(&hashes);
        for (i, want) in roots.iter().enumerate() {
            assert_eq!(hex::encode(root(&nodes, i as u64 + 1)), *want, "size {}", i + 1);
        }
        assert_eq!(hex::encode(empty_root()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn roots_and_proofs_match_the_definitions_and_verify() {
        let all = leaves(70);
        let nodes = grown(&all);
        for n in 1..=all.len() {
            let tree = &all[..n];
            let size = n as u64;
            let r = root(&nodes, size);
            assert_eq!(r, reference_root(tree), "root of {n}");
            for m in 0..n {
                let path = inclusion_proof(&nodes, m as u64, size).unwrap();
                assert_eq!(path, reference_path(m, tree), "path of {m} in {n}");
                assert!(verify_inclusion(&tree[m], m as u64, size, &path, &r), "verify {m} in {n}");
            }
            for m in 0..=n {
                let proof = consistency_proof(&nodes, m as u64, size).unwrap();
                if m > 0 && m < n {
                    assert_eq!(proof, reference_subproof(m, tree, true), "proof {m} -> {n}");
                }
                let old = root(&nodes, m as u64);
                assert!(verify_consistency(m as u64, size, &proof, &old, &r), "consistency {m} -> {n}");
            }
        }
    }

    #[test]
    fn what_a_computation_reads_is_listed_first() {
        let all = leaves(37);
        let nodes = grown(&all);
        for (m, n) in [(0u64, 37u64), (5, 37), (36, 37), (16, 33), (7, 8)] {
            let want = needed(|r| (inclusion_proof(r, m, n), consistency_proof(r, m.max(1), n), root(r, n)));
            let fetched: BTreeMap<NodeId, Hash> = want.iter().map(|id| (*id, nodes[id])).collect();
            assert_eq!(inclusion_proof(&fetched, m, n), inclusion_proof(&nodes, m, n));
            assert_eq!(consistency_proof(&fetched, m.max(1), n), consistency_proof(&nodes, m.max(1), n));
            assert!(want.len() <= 4 * 64, "O(log n) nodes");
        }
    }

    #[test]
    fn a_changed_leaf_path_root_or_size_fails_verification() {
        let all = leaves(21);
        let nodes = grown(&all);
        let r = root(&nodes, 21);
        let path = inclusion_proof(&nodes, 6, 21).unwrap();
        assert!(verify_inclusion(&all[6], 6, 21, &path, &r));
        assert!(!verify_inclusion(&all[7], 6, 21, &path, &r), "another leaf");
        assert!(!verify_inclusion(&all[6], 7, 21, &path, &r), "another index");
        // (A size with the same path shape is not caught here: the size
        // is bound to the root by the checkpoint's signature.)
        assert!(!verify_inclusion(&all[6], 6, 8, &path, &r), "another size");
        assert!(!verify_inclusion(&all[6], 6, 40, &path, &r), "another size");
        assert!(!verify_inclusion(&all[6], 21, 21, &path, &r), "index past the end");
        assert!(!verify_inclusion(&all[6], 6, 21, &path[1..], &r), "a hash dropped");
        let mut longer = path.clone();
        longer.push([7; 32]);
        assert!(!verify_inclusion(&all[6], 6, 21, &longer, &r), "a hash added");
        for i in 0..path.len() {
            let mut bent = path.clone();
            bent[i][0] ^= 1;
            assert!(!verify_inclusion(&all[6], 6, 21, &bent, &r), "hash {i} changed");
        }

        let old = root(&nodes, 13);
        let proof = consistency_proof(&nodes, 13, 21).unwrap();
        assert!(verify_consistency(13, 21, &proof, &old, &r));
        assert!(!verify_consistency(13, 21, &proof, &root(&nodes, 12), &r), "another old root");
        assert!(!verify_consistency(12, 21, &proof, &old, &r), "another old size");
        assert!(!verify_consistency(21, 13, &proof, &r, &old), "shrinking");
        assert!(!verify_consistency(13, 21, &[], &old, &r), "no proof");
        assert!(!verify_consistency(21, 21, &[], &old, &r), "same size, another root");
        for i in 0..proof.len() {
            let mut bent = proof.clone();
            bent[i][31] ^= 1;
            assert!(!verify_consistency(13, 21, &bent, &old, &r), "hash {i} changed");
        }
        // A fork: the same first 13 leaves but one changed later on is still
        // consistent (only history counts); one changed among the first 13
        // is not.
        let mut forked = all.clone();
        forked[4] = leaf_hash(b"rewritten");
        let other = grown(&forked);
        let proof = consistency_proof(&other, 13, 21).unwrap();
        assert!(!verify_consistency(13, 21, &proof, &old, &root(&other, 21)));
    }
}

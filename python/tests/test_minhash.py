"""MinHash, LeanMinHash: datasketch's semantics, checked against exact
Jaccard (the hash values are neardup's own)."""

import pickle
import random

import pytest

from neardup import LeanMinHash, MinHash


def exact(a, b):
    a, b = set(a), set(b)
    return len(a & b) / len(a | b)


def sets(seed, n=200, overlap=0.7):
    rng = random.Random(seed)
    common = [f"c{seed}-{i}".encode() for i in range(int(n * overlap))]
    a = common + [f"a{i}".encode() for i in range(n - len(common))]
    b = common + [f"b{i}".encode() for i in range(n - len(common))]
    rng.shuffle(a)
    return a, b


@pytest.mark.parametrize("overlap", [0.2, 0.5, 0.8, 0.95])
def test_jaccard_estimate(overlap):
    a, b = sets(1, 1000, overlap)
    m1, m2 = MinHash(num_perm=256), MinHash(num_perm=256)
    for x in a:
        m1.update(x)
    m2.update_batch(b)
    j = exact(a, b)
    # 4 standard errors of the estimator, sqrt(J(1-J)/K)
    assert abs(m1.jaccard(m2) - j) <= 4 * (j * (1 - j) / 256) ** 0.5 + 1e-9


def test_update_and_batch_agree():
    a, _ = sets(2)
    m1, m2, m3 = MinHash(), MinHash(), MinHash()
    for x in a:
        m1.update(x)
    m2.update_batch(a)
    m3.update_batch(x.decode() for x in a)  # str is UTF-8 encoded
    assert m1 == m2 == m3
    assert list(m1.digest()) == list(m2.hashvalues)
    assert MinHash.bulk([a])[0] == m1


def test_empty_and_clear():
    m = MinHash(num_perm=16)
    assert m.is_empty() and len(m) == 16
    m.update(b"x")
    assert not m.is_empty()
    m.clear()
    assert m.is_empty()
    assert m.jaccard(MinHash(num_perm=16)) == 1.0


def test_merge_union_count():
    a, b = sets(3, 500, 0.5)
    m1, m2, mu = MinHash(), MinHash(), MinHash()
    m1.update_batch(a)
    m2.update_batch(b)
    mu.update_batch(a + b)
    u = MinHash.union(m1, m2)
    m1.merge(m2)
    assert m1 == u == mu
    assert abs(mu.count() - len(set(a + b))) / len(set(a + b)) < 0.3


def test_mismatch_errors():
    with pytest.raises(ValueError):
        MinHash(num_perm=16).jaccard(MinHash(num_perm=32))
    with pytest.raises(ValueError):
        MinHash(seed=1).merge(MinHash(seed=2))
    with pytest.raises(ValueError):
        MinHash.union(MinHash())


def test_seed_and_permutations():
    a, _ = sets(4)
    m1, m2 = MinHash(seed=1), MinHash(seed=2)
    m1.update_batch(a)
    m2.update_batch(a)
    assert list(m1.digest()) != list(m2.digest())
    m3 = MinHash(permutations=m2.permutations)
    m3.update_batch(a)
    assert m3 == m2


def test_hashfunc():
    m = MinHash(num_perm=8, hashfunc=lambda x: x)
    m.update(12)
    m.update(13)
    n = MinHash(num_perm=8, hashfunc=lambda x: x)
    n.update(13)
    n.update(12)
    assert m == n and not m.is_empty()


def test_pickle_copy_lean():
    a, _ = sets(5)
    m = MinHash()
    m.update_batch(a)
    assert pickle.loads(pickle.dumps(m)) == m
    c = m.copy()
    c.update(b"more")
    assert c != m
    lm = LeanMinHash(m)
    assert lm.jaccard(m) == 1.0
    with pytest.raises(TypeError):
        lm.update(b"x")
    buf = bytearray(lm.bytesize())
    lm.serialize(buf)
    lm2 = LeanMinHash.deserialize(buf)
    assert lm2 == lm and hash(lm2) == hash(lm)
    assert pickle.loads(pickle.dumps(lm)) == lm


def test_bulk_matches_per_object():
    docs = [sets(i, 50)[0] for i in range(30)] + [[]]
    bulk = MinHash.bulk(docs, num_perm=64)
    for d, b in zip(docs, bulk):
        m = MinHash(num_perm=64)
        m.update_batch(d)
        assert m == b


def test_update_refuses_what_is_not_bytes():
    # datasketch's update raises TypeError for an int or None (SHA-1 wants
    # bytes). bytes(5) is five zero bytes: an int was hashed as those,
    # silently; and a bad element lost every element pending with it.
    m = MinHash(num_perm=16)
    with pytest.raises(TypeError, match="int, want bytes"):
        m.update(5)
    assert m.is_empty()
    zeros = MinHash(num_perm=16)
    zeros.update(b"\0" * 5)
    assert m != zeros
    m.update(b"a")
    with pytest.raises(TypeError, match="NoneType, want bytes"):
        m.update(None)
    m.update(b"b")
    ab = MinHash(num_perm=16)
    ab.update_batch([b"a", b"b"])
    assert m == ab
    # update_batch checks when the elements are hashed: the others are
    # added, the bad one is not, and the error says which type it was.
    n = MinHash(num_perm=16)
    n.update_batch([b"a", 3.5, b"b"])
    with pytest.raises(TypeError, match="float, want bytes"):
        n.digest()
    assert n == ab
    # bytes-like objects are their bytes, as with hashlib
    v = MinHash(num_perm=16)
    v.update_batch([bytearray(b"a"), memoryview(b"b")])
    assert v == ab


def test_hashfunc_error_keeps_the_other_elements():
    def h(x):
        if x == "bad":
            raise KeyError(x)
        return len(x) * 7919
    m = MinHash(num_perm=8, hashfunc=h)
    m.update_batch(["a", "bad", "bcd"])
    with pytest.raises(KeyError):
        m.digest()
    n = MinHash(num_perm=8, hashfunc=h)
    n.update_batch(["a", "bcd"])
    assert m == n and not m.is_empty()

"""MinHashLSH: datasketch's API over the Go index, checked against a
brute-force scan."""

import pickle
import random

import pytest

from neardup import MinHash, MinHashLSH


def corpus(n=300, seed=11):
    rng = random.Random(seed)
    docs = {}
    for i in range(n // 3):
        base = {f"t{rng.randrange(100000)}".encode() for _ in range(100)}
        docs[f"d{i}"] = base
        v = set(base)
        for x in rng.sample(sorted(v), 5):
            v.discard(x)
            v.add(f"n{rng.randrange(100000)}".encode())
        docs[f"d{i}-near"] = v
        docs[f"d{i}-far"] = {f"f{rng.randrange(100000)}".encode() for _ in range(100)}
    return docs


def test_params_as_datasketch():
    assert (MinHashLSH(threshold=0.8, num_perm=128).b, MinHashLSH(threshold=0.8, num_perm=128).r) == (9, 13)
    l1, l2 = MinHashLSH(threshold=0.8), MinHashLSH(threshold=0.8, weights=(0.2, 0.8))
    assert l1.b < l2.b and l1.r > l2.r
    assert (MinHashLSH(num_perm=16, params=(4, 4)).b, MinHashLSH(num_perm=16, params=(4, 4)).r) == (4, 4)
    for bad in [1.5, 0.0, -0.1, float("nan")]:
        with pytest.raises(ValueError, match=r"threshold must be in \(0.0, 1.0\]"):
            MinHashLSH(threshold=bad)
    # A band or row count of 0 or less chose a banding in silence.
    for bad in [(-1, 2), (0, 5), (-3, -3), (2.5, 2)]:
        with pytest.raises(ValueError, match="params must be"):
            MinHashLSH(num_perm=128, params=bad)


def test_recall_against_brute_force():
    docs = corpus()
    mh = {}
    for k, s in docs.items():
        m = MinHash()
        m.update_batch(s)
        mh[k] = m
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    with lsh.insertion_session() as session:
        for k, m in mh.items():
            session.insert(k, m)
    assert len(lsh) == len(docs) and "d0" in lsh and "nope" not in lsh
    found = missed = 0
    for k, s in docs.items():
        cands = set(lsh.query(mh[k]))
        assert k in cands
        for k2, s2 in docs.items():
            if len(s & s2) / len(s | s2) >= 0.85:
                if k2 in cands:
                    found += 1
                else:
                    missed += 1
    assert missed <= 0.05 * (found + missed)
    # far documents are not candidates of the originals
    assert all(f"d{i}-far" not in lsh.query(mh[f"d{i}"]) for i in range(10))


def test_insert_remove_errors():
    lsh = MinHashLSH(threshold=0.5, num_perm=16)
    m1, m2 = MinHash(16), MinHash(16)
    m1.update(b"a")
    m2.update(b"b")
    lsh.insert("a", m1)
    lsh.insert("b", m2)
    with pytest.raises(ValueError):
        lsh.insert("a", m1)
    with pytest.raises(ValueError):
        lsh.insert("c", MinHash(18))
    with pytest.raises(ValueError):
        lsh.query(MinHash(18))
    assert "a" in lsh.query(m1)
    lsh.remove("a")
    assert "a" not in lsh and "a" not in lsh.query(m1)
    with pytest.raises(ValueError):
        lsh.remove("a")
    lsh.insert("a", m1)  # a removed key can come back
    assert "a" in lsh.query(m1)
    tables = lsh.hashtables
    assert len(tables) == lsh.b and all(any("b" in ks for ks in t.values()) for t in tables)
    assert [sum(c.values()) for c in lsh.get_counts()] == [2] * lsh.b


def test_query_buffer_and_pickle():
    lsh = MinHashLSH(threshold=0.5, num_perm=32)
    ms = []
    for toks in ([b"a", b"b", b"c"], [b"a", b"b", b"d"], [b"x", b"y", b"z"]):
        m = MinHash(num_perm=32)
        m.update_batch(toks)
        ms.append(m)
    for i, m in enumerate(ms):
        lsh.insert(i, m)
    lsh.add_to_query_buffer(ms[0])
    assert set(lsh.collect_query_buffer()) == set(lsh.query(ms[0]))
    lsh2 = pickle.loads(pickle.dumps(lsh))
    assert sorted(lsh2.query(ms[2])) == sorted(lsh.query(ms[2]))
    assert len(lsh2) == 3


def test_merge():
    a, b = MinHashLSH(threshold=0.5, num_perm=16), MinHashLSH(threshold=0.5, num_perm=16)
    ms = []
    for t in (b"a", b"b", b"c"):
        m = MinHash(16)
        m.update(t)
        ms.append(m)
    a.insert("a", ms[0])
    b.insert("b", ms[1])
    b.insert("a", ms[2])
    with pytest.raises(ValueError):
        a.merge(b, check_overlap=True)
    a.merge(b)
    assert "b" in a and a.query(ms[1]) == ["b"]
    assert a.query(ms[2]) == ["a"] and "a" in a.query(ms[0])
    a.remove("a")
    assert a.query(ms[2]) == [] and len(a) == 1


def test_threads_share_an_index():
    # Insert and query release the GIL while Go works: threads calling
    # one index at once must each get their own signature in and out.
    import sys
    import threading

    docs = corpus(n=1200, seed=5)
    mh = {}
    for k, s in docs.items():
        m = MinHash()
        m.update_batch(sorted(s))
        m.digest()
        mh[k] = m
    keys = sorted(mh)
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    errors, missed = [], []

    def work(part):
        try:
            for k in part:
                lsh.insert(k, mh[k])
                if k not in lsh.query(mh[k]):
                    missed.append(k)
        except Exception as e:  # pragma: no cover - the failure reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(keys[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    assert missed == []
    assert len(lsh) == len(keys)
    assert [k for k in keys if k not in lsh.query(mh[k])] == []
